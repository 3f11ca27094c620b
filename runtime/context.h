#pragma once
// Context: everything an op needs to run on one replica's device. On the CPU
// that is a reusable scratch workspace; on a GPU also the compute and
// communication streams, the cuDNN and cuBLAS handles and their workspace
// (CudaState, runtime/cuda/cuda_context.h), created once and owned here.
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/context_options.h"
#include "runtime/cuda_state_handle.h"
#include "runtime/device.h"
#include "runtime/precision.h"
#include "runtime/precision_policy.h"
#include "runtime/replica_group.h"
#include "runtime/tensor.h"

namespace lockstep {

class Context {
public:
  explicit Context(Device device, ContextOptions options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Device device() const { return device_; }
  // The options given, with memory_format resolved (always set).
  const ContextOptions& options() const { return options_; }
  // The activations' memory format in force: the one given, or the default
  // for this device and precision (resolve_memory_format).
  MemoryFormat memory_format() const { return *options_.memory_format; }
  // What options().precision means on this device: what layers and ops ask.
  const PrecisionPolicy& precision_policy() const { return precision_policy_; }
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
  // Tensor::copy_from and Tensor::zero, which wait for the device's queued
  // work and for the copy (runtime/memory.h). `src` and `dst` need the same
  // element count and dtype; one of them may live on the host.
  void copy(const Tensor& src, Tensor& dst);
  void zero(Tensor& t);
  // Copies queued ahead of the compute stream: on a GPU on the context's
  // copy stream, so a later step's host-to-device copy overlaps this step's
  // compute. Compute work sees them only once wait_for_copies_ahead() has
  // made the compute stream wait (an event: the host waits for nothing) for
  // every copy queued ahead so far. On the CPU a plain copy, and no wait.
  // The caller keeps `src` untouched, and `dst` unused by earlier compute
  // work still queued, until the copy is done.
  void copy_ahead(const Tensor& src, Tensor& dst);
  void wait_for_copies_ahead();

  // The replicas this context's replica belongs to (not owned), or null for
  // a context of its own (the replica manager sets it).
  ReplicaGroup* replica_group() const { return replica_group_; }
  void set_replica_group(ReplicaGroup* group) { replica_group_ = group; }

  // Per-phase times without waiting: a mark is a timing event recorded on
  // the compute stream on a GPU, the host clock on the CPU. mark_time()
  // returns the mark's index; clear_marks() starts a new timeline (the
  // replica manager does at the start of each step). The last 64 marks can
  // be read.
  int mark_time();
  void clear_marks();
  // Seconds from mark `from` to mark `to`. On a GPU only once the compute
  // stream has passed `to` (after synchronize() or the step's read-back).
  double seconds_between(int from, int to);

private:
  Device device_;
  ContextOptions options_;
  PrecisionPolicy precision_policy_;
  Tensor workspace_;
  std::unique_ptr<CudaState> cuda_;
  std::vector<std::chrono::steady_clock::time_point> host_marks_;  // mark m at m % 64
  size_t host_marks_used_ = 0;
  ReplicaGroup* replica_group_ = nullptr;
};

}  // namespace lockstep
