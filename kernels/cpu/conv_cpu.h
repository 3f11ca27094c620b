#pragma once
// CPU reference of the 2-D convolution, as Caffe's CPU mode does it: samples
// are unfolded into a column matrix (im2col) and multiplied with the weights
// by OpenBLAS sgemm; the data gradient folds columns back (col2im). Samples go
// in chunks side by side in one column matrix [C*K*K, S*OH*OW], so each chunk
// is one large sgemm (a per-sample sgemm on a 28x28 image is too small for
// OpenBLAS to run well, let alone on several threads).
// Layouts: x [N, C, H, W], w [O, C, K, K], y [N, O, OH, OW], bias [O].
// `scratch` holds at least conv_scratch_floats(g) floats.
#include "kernels/conv_geometry.h"

namespace lockstep::cpu {

// Samples per chunk, and the scratch a chunk needs (its column matrix and a
// [O, S*OH*OW] product).
int64_t conv_chunk_samples(const ConvGeometry& g);
int64_t conv_scratch_floats(const ConvGeometry& g);

// One sample [C, H, W] -> its column matrix [C*K*K, OH*OW], zeros where a tap
// falls into the padding; consecutive rows lie `row_stride` floats apart.
void im2col(const ConvGeometry& g, const float* image, float* columns, int64_t row_stride);
// Adds every column entry back onto the pixel it was read from.
void col2im_add(const ConvGeometry& g, const float* columns, int64_t row_stride, float* image);

// y = conv(x, w) + bias (bias may be null).
void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y,
                    float* scratch);
// dx = (or +=, when accumulate) the gradient of the input.
void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx, bool accumulate,
                          float* scratch);
// dw = sum over samples of dy_n * columns(x_n)^T (written).
void conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* scratch);

}  // namespace lockstep::cpu
