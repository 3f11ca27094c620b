#pragma once
// One convolution (batch x 6 x 13 x 11, 10 filters of 3x3, stride 2, padding
// 1) forward, backward data and backward filter on either device, from fixed
// seeds: the case the convolution's plan, determinism, workspace and
// precision tests run.
#include "ops/conv.h"
#include "support/layer_harness.h"

namespace lockstep::testing {

struct ConvCase {
  Tensor x, w, y, dx, dw;
};

inline ConvCase make_conv(Device d, int64_t batch) {
  ConvCase c;
  c.x = random_tensor(Shape{batch, 6, 13, 11}, 1, -1.0f, 1.0f, d);
  c.w = random_tensor(Shape{10, 6, 3, 3}, 2, -1.0f, 1.0f, d);
  c.y = Tensor::empty(Shape{batch, 10, 7, 6}, d);
  c.dx = Tensor::empty(c.x.shape(), d);
  c.dw = Tensor::empty(c.w.shape(), d);
  return c;
}

inline void run_conv(Context& ctx, ConvCase& c) {
  ops::conv2d_forward(ctx, c.x, c.w, nullptr, c.y, 2, 1);
  ops::conv2d_backward_data(ctx, c.y, c.w, c.dx, 2, 1, false);
  ops::conv2d_backward_filter(ctx, c.x, c.y, c.dw, 2, 1);
}

}  // namespace lockstep::testing
