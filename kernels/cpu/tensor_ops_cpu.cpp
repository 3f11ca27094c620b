#include "kernels/cpu/tensor_ops_cpu.h"

#include <array>

#include "kernels/cpu/lane_sums.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/elementwise_math.h"

namespace lockstep::cpu {

void add(const float* a, const float* b, float* y, int64_t n) {
  parallel_elements(n, [&](int64_t i) { y[i] = a[i] + b[i]; });
}

void copy_or_add(const float* src, float* dst, int64_t n, bool accumulate) {
  parallel_elements(n, [&](int64_t i) { store_grad(dst[i], src[i], accumulate); });
}

void channel_sums(const float* x, int64_t n, int64_t channels, int64_t spatial, float* out) {
  parallel_items(channels, n * spatial, [&](int64_t c) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const float* row = x + (i * channels + c) * spatial;
      add_lane_sums<1>(spatial, [&](int64_t p) { return std::array<float, 1>{row[p]}; }, &sum);
    }
    out[c] = static_cast<float>(sum);
  });
}

}  // namespace lockstep::cpu
