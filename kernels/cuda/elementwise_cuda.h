#pragma once
// CUDA launchers of the element-wise ops; the math is kernels/elementwise_math.h.
// T, the stored type of the tensors, is float or bf16_bits (kernels/stored_type.h).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lockstep::cuda {

template <typename T> void relu_forward(cudaStream_t stream, const T* x, T* y, int64_t n);
// dx = dy where y > 0, else 0; added to dx instead when `accumulate`.
template <typename T>
void relu_backward(cudaStream_t stream, const T* y, const T* dy, T* dx, int64_t n, bool accumulate);

}  // namespace lockstep::cuda
