#include "kernels/cpu/transpose_cpu.h"

namespace lockstep::cpu {

void transpose_planes(const float* x, float* y, int64_t batch, int64_t rows, int64_t cols) {
  // Blocks of 32 x 32 keep both the rows read and the rows written in cache.
  constexpr int64_t kBlock = 32;
  for (int64_t b = 0; b < batch; ++b) {
    const float* in = x + b * rows * cols;
    float* out = y + b * rows * cols;
    for (int64_t i0 = 0; i0 < rows; i0 += kBlock)
      for (int64_t j0 = 0; j0 < cols; j0 += kBlock)
        for (int64_t i = i0; i < rows && i < i0 + kBlock; ++i)
          for (int64_t j = j0; j < cols && j < j0 + kBlock; ++j) out[j * rows + i] = in[i * cols + j];
  }
}

}  // namespace lockstep::cpu
