#pragma once
// CudaLibraries: what the cuDNN and cuBLAS twins (conv_cuda, pool_cuda,
// linear_cuda) need of a replica's GPU resources: the device, the compute
// stream, the library handles bound to it, the cuDNN plans chosen so far
// (kernels/cuda/cudnn_plans.h), the settings that pick algorithms, and
// device memory for workspaces. runtime/cuda/cuda_context.h's CudaState is
// one, and owns all of it; kernels/ sees only this.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>

namespace lockstep {

class CudnnPlans;

class CudaLibraries {
public:
  int device = -1;
  cudaStream_t compute_stream = nullptr;
  cudnnHandle_t cudnn = nullptr;    // runs on compute_stream
  cublasHandle_t cublas = nullptr;  // runs on compute_stream, with its own workspace
  bool deterministic = false;       // deterministic cuDNN algorithms only
  // TF32 tensor-core math in cuDNN and cuBLAS: ContextOptions::precision
  // tf32 (runtime/precision.h); off, they compute in strict FP32.
  bool allow_tf32 = false;
  // Descriptors and algorithms per shape; only the owning thread uses them.
  std::unique_ptr<CudnnPlans> plans;

  // Device memory of at least `bytes` for cuDNN on the compute stream: grows
  // on demand, never beyond workspace_limit_bytes (an Error names both).
  // Valid until the next call; work already queued on the compute stream may
  // still use the old block, which stream order makes safe.
  virtual void* workspace(size_t bytes) = 0;
  virtual size_t workspace_limit_bytes() const = 0;
  // Device memory for an algorithm search, given back with release_scratch;
  // throws an Error when the device is short of it.
  virtual void* allocate_scratch(size_t bytes) = 0;
  virtual void release_scratch(void* ptr, size_t bytes) = 0;

protected:
  CudaLibraries();
  ~CudaLibraries();
};

}  // namespace lockstep
