#include "kernels/cpu/tensor_ops_cpu.h"

#include "kernels/elementwise_math.h"

namespace lockstep::cpu {

void add(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void copy_or_add(const float* src, float* dst, int64_t n, bool accumulate) {
  for (int64_t i = 0; i < n; ++i) store_grad(dst[i], src[i], accumulate);
}

void channel_sums(const float* x, int64_t n, int64_t channels, int64_t spatial, float* out) {
  for (int64_t c = 0; c < channels; ++c) {
    // Independent float lanes per row vectorise; each row's total then joins a
    // double, so a large batch of large images loses nothing to rounding.
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const float* row = x + (i * channels + c) * spatial;
      constexpr int lanes = 16;
      float partial[lanes] = {};
      int64_t p = 0;
      for (; p + lanes <= spatial; p += lanes)
        for (int l = 0; l < lanes; ++l) partial[l] += row[p + l];
      for (; p < spatial; ++p) partial[0] += row[p];
      for (float v : partial) sum += v;
    }
    out[c] = static_cast<float>(sum);
  }
}

}  // namespace lockstep::cpu
