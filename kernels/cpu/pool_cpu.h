#pragma once
// CPU reference pooling over g.planes planes of g.in_h x g.in_w (NCHW with N*C
// planes). Every loop writes its output, or adds to it when `accumulate`.
#include <cstdint>

#include "kernels/pool_geometry.h"

namespace lockstep::cpu {

// y = max over each window, padding counting as -inf.
void max_pool2d_forward(const float* x, float* y, const PoolGeometry& g);
// Routes each dy to its window's arg-max in x (the first on ties), found again
// from x rather than saved.
void max_pool2d_backward(const float* x, const float* dy, float* dx, const PoolGeometry& g, bool accumulate);

// y = sum over each window / kernel^2 (padding counts as zeros).
void avg_pool2d_forward(const float* x, float* y, const PoolGeometry& g);
void avg_pool2d_backward(const float* dy, float* dx, const PoolGeometry& g, bool accumulate);

// One mean per plane of `plane_size` elements.
void global_avg_pool_forward(const float* x, float* y, int64_t planes, int64_t plane_size);
void global_avg_pool_backward(const float* dy, float* dx, int64_t planes, int64_t plane_size, bool accumulate);

// Adaptive average pooling (PyTorch's AdaptiveAvgPool2d): output row i of
// out_h averages input rows floor(i * in_h / out_h) to ceil((i + 1) * in_h /
// out_h) - 1, and the same for columns; windows may overlap, and an output
// larger than the input repeats input values.
void adaptive_avg_pool2d_forward(const float* x, float* y, int64_t planes, int64_t in_h, int64_t in_w, int64_t out_h,
                                 int64_t out_w);
void adaptive_avg_pool2d_backward(const float* dy, float* dx, int64_t planes, int64_t in_h, int64_t in_w,
                                  int64_t out_h, int64_t out_w, bool accumulate);

}  // namespace lockstep::cpu
