#pragma once
// The fully connected products of one context on cuBLAS, on raw device
// pointers. Row-major x [batch, in], w [out, in], y [batch, out] are, to
// column-major cuBLAS, x^T, w^T and y^T, so each product is computed in its
// transposed form (y^T = w x^T, dx^T = w^T dy^T, dw^T = x^T dy) with no copy.
// TF32 follows the handle's math mode (ContextOptions::precision tf32).
#include <cstdint>

namespace lockstep {
class CudaLibraries;
}

namespace lockstep::cuda {

// y = x w^T + bias (the bias preloaded into y, as the CPU reference does); bias may be null.
void linear_forward(CudaLibraries& state, const float* x, const float* w, const float* bias, float* y, int64_t batch,
                    int64_t in_features, int64_t out_features);
// dx = dy w, written or added when `accumulate`.
void linear_backward_data(CudaLibraries& state, const float* dy, const float* w, float* dx, int64_t batch,
                          int64_t in_features, int64_t out_features, bool accumulate);
// dw = dy^T x, written (zeros for an empty batch).
void linear_backward_weight(CudaLibraries& state, const float* x, const float* dy, float* dw, int64_t batch,
                            int64_t in_features, int64_t out_features);
// db = the column sums of dy, in double, rows in order.
void linear_backward_bias(CudaLibraries& state, const float* dy, float* db, int64_t batch, int64_t out_features);

}  // namespace lockstep::cuda
