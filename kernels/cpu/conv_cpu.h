#pragma once
// CPU reference of the 2-D convolution, as Caffe's CPU mode does it: each
// sample is unfolded into a column matrix (im2col) and multiplied with the
// weights by one OpenBLAS sgemm; the data gradient folds columns back (col2im).
// Layouts: x [N, C, H, W], w [O, C, K, K], y [N, O, OH, OW], bias [O].
// `columns` is scratch of at least g.column_rows() * g.column_cols() floats
// (unused when g.is_pointwise()).
#include "kernels/conv_geometry.h"

namespace lockstep::cpu {

// One sample [C, H, W] -> its column matrix [C*K*K, OH*OW], zeros where a tap
// falls into the padding.
void im2col(const ConvGeometry& g, const float* image, float* columns);
// Adds every column entry back onto the pixel it was read from.
void col2im_add(const ConvGeometry& g, const float* columns, float* image);

// y = conv(x, w) + bias (bias may be null).
void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y,
                    float* columns);
// dx = (or +=, when accumulate) the gradient of the input.
void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx, bool accumulate,
                          float* columns);
// dw = sum over samples of dy_n * columns(x_n)^T (written).
void conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* columns);
// db[o] = sum of dy over samples and pixels of channel o (written).
void conv2d_backward_bias(const ConvGeometry& g, const float* dy, float* db);

}  // namespace lockstep::cpu
