#pragma once
// The SGD-momentum step as the unfused sequence a framework without a fused
// optimizer runs: g += wd * w; v = mu * v + g; w -= lr * v; g = 0, one
// kernel each (the last a memset), over one contiguous run of parameters
// with one weight decay. It exists as the baseline of bench_gpu_kernels:
// it moves 40 bytes per parameter where the fused kernel moves 24.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/sgd_math.h"

namespace lockstep::cuda {

void sgd_momentum_unfused(cudaStream_t stream, float* w, float* g, float* v, int64_t n, const SgdHyper& hyper);

}  // namespace lockstep::cuda
