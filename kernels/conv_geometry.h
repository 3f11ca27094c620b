#pragma once
// The geometry of a square-kernel 2-D convolution over NCHW tensors: the one
// description of a convolution that the CPU reference, the CUDA backend and
// the layers share. kernels/ throws nothing, so make() reports a bad
// configuration as text and the caller (an engine op or a layer) throws it
// with its own name and the shapes in front.
#include <cstdint>
#include <string>

#include "kernels/host_device.h"

namespace lockstep {

struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0;
  int64_t kernel = 0, stride = 1, padding = 0;
  int64_t out_h = 0, out_w = 0;

  // Fills `out` (output size included) and returns an empty string when the
  // configuration is valid; otherwise returns what is wrong, in words, and
  // leaves `out` unspecified.
  [[nodiscard]] static std::string make(int64_t batch, int64_t in_channels, int64_t in_h, int64_t in_w,
                                        int64_t out_channels, int64_t kernel, int64_t stride, int64_t padding,
                                        ConvGeometry& out) {
    auto num = [](int64_t v) { return std::to_string(v); };
    if (batch < 0) return "negative batch size " + num(batch);
    if (in_channels < 1) return "the input has " + num(in_channels) + " channels; a convolution needs at least 1";
    if (out_channels < 1) return num(out_channels) + " output channels asked for; a convolution needs at least 1";
    if (in_h < 1 || in_w < 1) return "the input image " + num(in_h) + "x" + num(in_w) + " is empty";
    if (kernel < 1) return "kernel size " + num(kernel) + " must be at least 1";
    if (stride < 1) return "stride " + num(stride) + " must be at least 1";
    if (padding < 0) return "padding " + num(padding) + " must not be negative";
    int64_t padded_h = in_h + 2 * padding, padded_w = in_w + 2 * padding;
    if (kernel > padded_h || kernel > padded_w)
      return "kernel " + num(kernel) + "x" + num(kernel) + " is larger than the padded input " + num(padded_h) +
             "x" + num(padded_w) + " (image " + num(in_h) + "x" + num(in_w) + ", padding " + num(padding) + ")";
    out = ConvGeometry{batch,  in_channels, in_h, in_w, out_channels, kernel, stride, padding,
                       (padded_h - kernel) / stride + 1, (padded_w - kernel) / stride + 1};
    return {};
  }

  // im2col view of one sample: a [column_rows, column_cols] matrix whose row
  // (c, ki, kj) holds, for every output pixel, the input value under that tap.
  LS_HD int64_t column_rows() const { return in_channels * kernel * kernel; }
  LS_HD int64_t column_cols() const { return out_h * out_w; }
  LS_HD int64_t in_sample() const { return in_channels * in_h * in_w; }
  LS_HD int64_t out_sample() const { return out_channels * out_h * out_w; }
  LS_HD int64_t weight_numel() const { return out_channels * column_rows(); }
  // 1x1, stride 1, no padding: the column matrix is the image itself.
  LS_HD bool is_pointwise() const { return kernel == 1 && stride == 1 && padding == 0; }
};

}  // namespace lockstep
