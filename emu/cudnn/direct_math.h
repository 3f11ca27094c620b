#pragma once
// The emulated cuDNN's own arithmetic for convolutions and pooling, written
// apart from lockstep's CPU kernels (kernels/cpu/), so that an emulated "GPU
// against CPU" test compares two computations, not the reference with
// itself. A convolution unfolds each sample into columns here and multiplies
// them with OpenBLAS's sgemm (as the cuBLAS stand-in does); pooling is plain
// direct loops. Speed matters only as far as CI's time does.
#include <cstdint>

namespace lockstep::emu::cudnn {

// A 2-D cross-correlation of square kernels with one stride and padding.
struct DirectConv {
  int64_t batch, in_channels, in_h, in_w;
  int64_t out_channels, kernel, stride, padding;
  int64_t out_h, out_w;
};

// Each takes a scratch of direct_conv_columns(g) floats (one sample's columns).
int64_t direct_conv_columns(const DirectConv& g);
// y[n,o,oh,ow] = sum over c, kh, kw of x[n,c,ih,iw] w[o,c,kh,kw].
void direct_conv_forward(const DirectConv& g, const float* x, const float* w, float* y, float* columns);
// dx[n,c,ih,iw] = sum over the outputs each input pixel feeds.
void direct_conv_backward_data(const DirectConv& g, const float* dy, const float* w, float* dx, float* columns);
// dw[o,c,kh,kw] = sum over n, oh, ow of x[n,c,ih,iw] dy[n,o,oh,ow].
void direct_conv_backward_filter(const DirectConv& g, const float* x, const float* dy, float* dw, float* columns);

// Pooling of `planes` planes (N*C) with square windows, one stride and
// padding, as cuDNN's CUDNN_POOLING_MAX_DETERMINISTIC (NaN propagated, the
// first maximum on ties routes the gradient) and
// CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING.
struct DirectPool {
  int64_t planes, in_h, in_w, out_h, out_w;
  int64_t kernel, stride, padding;
};
void direct_max_pool_forward(const DirectPool& g, const float* x, float* y);
void direct_max_pool_backward(const DirectPool& g, const float* x, const float* dy, float* dx);
void direct_avg_pool_forward(const DirectPool& g, const float* x, float* y);
void direct_avg_pool_backward(const DirectPool& g, const float* dy, float* dx);

}  // namespace lockstep::emu::cudnn
