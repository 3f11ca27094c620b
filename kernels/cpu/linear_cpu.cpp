#include "kernels/cpu/linear_cpu.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/gemm_cpu.h"

namespace lockstep::cpu {

void linear_forward(const float* x, const float* w, const float* bias, float* y, int64_t batch, int64_t in_features,
                    int64_t out_features) {
  if (batch == 0) return;
  // The bias is preloaded into y so the sgemm adds the product onto it (beta = 1).
  if (bias)
    for (int64_t n = 0; n < batch; ++n) std::copy(bias, bias + out_features, y + n * out_features);
  sgemm(false, true, batch, out_features, in_features, 1.0f, x, in_features, w, in_features, bias ? 1.0f : 0.0f, y,
        out_features);
}

void linear_backward_data(const float* dy, const float* w, float* dx, int64_t batch, int64_t in_features,
                          int64_t out_features, bool accumulate) {
  if (batch == 0) return;
  sgemm(false, false, batch, in_features, out_features, 1.0f, dy, out_features, w, in_features,
        accumulate ? 1.0f : 0.0f, dx, in_features);
}

void linear_backward_weight(const float* x, const float* dy, float* dw, int64_t batch, int64_t in_features,
                            int64_t out_features) {
  // An empty inner dimension is not one every BLAS handles: write the zeros here.
  if (batch == 0) return std::fill(dw, dw + out_features * in_features, 0.0f);
  sgemm(true, false, out_features, in_features, batch, 1.0f, dy, out_features, x, in_features, 0.0f, dw, in_features);
}

void linear_backward_bias(const float* dy, float* db, int64_t batch, int64_t out_features) {
  // Rows are summed into doubles, read in order, so a large batch loses nothing to float rounding.
  std::vector<double> sums(out_features, 0.0);
  for (int64_t n = 0; n < batch; ++n) {
    const float* row = dy + n * out_features;
    for (int64_t o = 0; o < out_features; ++o) sums[o] += row[o];
  }
  for (int64_t o = 0; o < out_features; ++o) db[o] = static_cast<float>(sums[o]);
}

}  // namespace lockstep::cpu
