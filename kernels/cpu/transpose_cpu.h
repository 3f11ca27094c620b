#pragma once
// The memory-format conversion (kernels/memory_format.h) on the CPU: each of
// `batch` matrices [rows, cols] transposed to [cols, rows]. NCHW -> NHWC is
// rows = C, cols = H * W; NHWC -> NCHW is rows = H * W, cols = C. The CUDA
// twin: kernels/cuda/transpose_cuda.h.
#include <cstdint>

namespace lockstep::cpu {

// y[b][j][i] = x[b][i][j]; x and y must not overlap.
void transpose_planes(const float* x, float* y, int64_t batch, int64_t rows, int64_t cols);

}  // namespace lockstep::cpu
