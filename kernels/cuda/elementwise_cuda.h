#pragma once
// CUDA launchers of the element-wise ops; the math is kernels/elementwise_math.h.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lockstep::cuda {

void relu_forward(cudaStream_t stream, const float* x, float* y, int64_t n);
// dx = dy where y > 0, else 0; added to dx instead when `accumulate`.
void relu_backward(cudaStream_t stream, const float* y, const float* dy, float* dx, int64_t n, bool accumulate);

}  // namespace lockstep::cuda
