#pragma once
// CUDA launchers of dropout (kernels/dropout_math.h): element i keeps its
// value when the counter-based draw at global index first_index + i is >= p,
// the same draw the CPU reference makes, so the masks agree bit for bit.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dropout_math.h"

namespace lockstep::cuda {

void dropout_forward(cudaStream_t stream, const float* x, float* y, int64_t n, DropoutKey key, uint64_t first_index,
                     float p);
// dx = dy * keep / (1 - p), written or added when `accumulate`.
void dropout_backward(cudaStream_t stream, const float* dy, float* dx, int64_t n, DropoutKey key, uint64_t first_index,
                      float p, bool accumulate);

}  // namespace lockstep::cuda
