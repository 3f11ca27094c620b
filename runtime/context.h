#pragma once
// Context: everything an op needs to run on one replica's device. On the CPU
// that is a reusable scratch workspace; on a GPU also the compute and
// communication streams, the cuDNN and cuBLAS handles and their workspace
// (CudaState, runtime/cuda/cuda_context.h), created once and owned here.
#include <cstdint>
#include <memory>

#include "runtime/device.h"
#include "runtime/tensor.h"

namespace lockstep {

struct ContextOptions {
  size_t workspace_limit_bytes = size_t(512) << 20;  // upper bound for conv workspaces
  bool deterministic = false;  // pick deterministic algorithms only
  bool allow_tf32 = false;     // TF32 tensor-core math in cuBLAS/cuDNN
  bool sync_timing = false;    // synchronise before reading clocks, so GPU phase times are real
};

struct CudaState;

class Context {
public:
  explicit Context(Device device, ContextOptions options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Device device() const { return device_; }
  const ContextOptions& options() const { return options_; }
  // Scratch memory of at least `bytes`, reused by the next call: valid until then.
  float* workspace(size_t bytes);
  size_t workspace_bytes() const { return workspace_.defined() ? workspace_.bytes() : 0; }
  // GPU resources; null on the CPU.
  CudaState* cuda() const { return cuda_.get(); }
  // Waits until all work queued on this context's streams is done.
  void synchronize();
  // Makes this context's GPU the calling thread's current device (CUDA
  // launches on a stream need it); nothing on the CPU. A replica's thread
  // calls it before running ops.
  void make_current() const;
  // Stream-ordered copy and fill: on a GPU they are queued on the compute
  // stream (pinned host memory keeps a host copy asynchronous), unlike
  // Tensor::copy_from and Tensor::zero, which run on the legacy default
  // stream and wait. `src` and `dst` need the same element count and dtype;
  // one of them may live on the host.
  void copy(const Tensor& src, Tensor& dst);
  void zero(Tensor& t);

private:
  Device device_;
  ContextOptions options_;
  Tensor workspace_;
  std::unique_ptr<CudaState> cuda_;
};

}  // namespace lockstep
