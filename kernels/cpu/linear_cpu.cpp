#include "kernels/cpu/linear_cpu.h"

#include <cblas.h>

#include <algorithm>
#include <vector>

namespace lockstep::cpu {

namespace {
int blas_int(int64_t v) { return static_cast<int>(v); }
}  // namespace

void linear_forward(const float* x, const float* w, const float* bias, float* y, int64_t batch, int64_t in_features,
                    int64_t out_features) {
  if (batch == 0) return;
  // The bias is preloaded into y so the sgemm adds the product onto it (beta = 1).
  if (bias)
    for (int64_t n = 0; n < batch; ++n) std::copy(bias, bias + out_features, y + n * out_features);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blas_int(batch), blas_int(out_features),
              blas_int(in_features), 1.0f, x, blas_int(in_features), w, blas_int(in_features), bias ? 1.0f : 0.0f, y,
              blas_int(out_features));
}

void linear_backward_data(const float* dy, const float* w, float* dx, int64_t batch, int64_t in_features,
                          int64_t out_features, bool accumulate) {
  if (batch == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_int(batch), blas_int(in_features),
              blas_int(out_features), 1.0f, dy, blas_int(out_features), w, blas_int(in_features),
              accumulate ? 1.0f : 0.0f, dx, blas_int(in_features));
}

void linear_backward_weight(const float* x, const float* dy, float* dw, int64_t batch, int64_t in_features,
                            int64_t out_features) {
  // An empty inner dimension is not one every BLAS handles: write the zeros here.
  if (batch == 0) return std::fill(dw, dw + out_features * in_features, 0.0f);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, blas_int(out_features), blas_int(in_features),
              blas_int(batch), 1.0f, dy, blas_int(out_features), x, blas_int(in_features), 0.0f, dw,
              blas_int(in_features));
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
