#pragma once
// The memory-format conversion on the GPU (the CPU twin and the meaning of
// the arguments: kernels/cpu/transpose_cpu.h).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lockstep::cuda {

// y[b][j][i] = x[b][i][j] for `batch` matrices [rows, cols]; x and y must not overlap.
// T: float or bf16_bits (kernels/bf16_math.h).
template <typename T>
void transpose_planes(cudaStream_t stream, const T* x, T* y, int64_t batch, int64_t rows, int64_t cols);

}  // namespace lockstep::cuda
