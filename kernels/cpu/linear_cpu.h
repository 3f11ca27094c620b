#pragma once
// CPU reference of the fully connected layer, one OpenBLAS sgemm per product.
// Layouts (row-major): x [N, F], w [O, F], bias [O], y [N, O].
#include <cstdint>

namespace lockstep::cpu {

// y = x w^T + bias (bias may be null).
void linear_forward(const float* x, const float* w, const float* bias, float* y, int64_t batch, int64_t in_features,
                    int64_t out_features);
// dx = (or +=, when accumulate) dy w.
void linear_backward_data(const float* dy, const float* w, float* dx, int64_t batch, int64_t in_features,
                          int64_t out_features, bool accumulate);
// dw = dy^T x (written; zeros for an empty batch).
void linear_backward_weight(const float* x, const float* dy, float* dw, int64_t batch, int64_t in_features,
                            int64_t out_features);
// db = the column sums of dy (written).
void linear_backward_bias(const float* dy, float* db, int64_t batch, int64_t out_features);

}  // namespace lockstep::cpu
