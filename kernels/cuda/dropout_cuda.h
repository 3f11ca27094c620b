#pragma once
// CUDA launchers of dropout (kernels/dropout_math.h): element i keeps its
// value when the counter-based draw at global index first_index + i is >= p,
// the same draw the CPU reference makes, so the masks agree bit for bit.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dropout_math.h"

namespace lockstep::cuda {

// T, the stored type of the tensors: float or bf16_bits (kernels/stored_type.h).
template <typename T>
void dropout_forward(cudaStream_t stream, const T* x, T* y, int64_t n, DropoutKey key, uint64_t first_index, float p);
// dx = dy * keep / (1 - p), written or added when `accumulate`.
template <typename T>
void dropout_backward(cudaStream_t stream, const T* dy, T* dx, int64_t n, DropoutKey key, uint64_t first_index, float p,
                      bool accumulate);

}  // namespace lockstep::cuda
