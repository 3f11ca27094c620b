// conv2d on the GPU (cuDNN) in FP32: the layer against the CPU reference
// (layer_compare.h), plans made once per shape, deterministic algorithms,
// no workspace, an empty batch. The NHWC and bf16 flavours are in
// test_gpu_conv2d_nhwc.cpp and test_gpu_conv2d_bf16.cpp.
#include <catch2/catch.hpp>

#include <memory>

#include "conv_case.h"
#include "gpu_compare.h"
#include "kernels/cuda/cudnn_plans.h"
#include "layer_compare.h"
#include "layers/conv2d.h"
#include "ops/conv.h"
#include "runtime/cuda/cuda_context.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::layer_compare::compare_layer;
using lockstep::testing::ConvCase;
using lockstep::testing::make_conv;
using lockstep::testing::random_tensor;
using lockstep::testing::require_close_scaled;
using lockstep::testing::run_conv;
using lockstep::testing::same_bits;

TEST_CASE("gpu conv2d equals the cpu reference", "[gpu][layers][conv2d]") {
  struct Case {
    Shape in;
    int64_t out;
    int kernel, stride, padding;
    bool bias;
  };
  std::vector<Case> cases = {
      {{3, 5, 7}, 5, 3, 1, 1, true},    // odd image, 'same' padding
      {{4, 9, 9}, 6, 3, 2, 0, false},   // stride 2, no padding
      {{5, 7, 7}, 3, 1, 1, 0, true},    // pointwise
      {{3, 8, 8}, 5, 1, 2, 0, false},   // the projection shortcut: 1x1 stride 2
      {{7, 6, 5}, 9, 5, 1, 2, true},    // 5x5
      {{3, 11, 11}, 7, 3, 2, 1, true},  // stride 2 with padding, odd size
  };
  for (int64_t batch : {1, 3}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      INFO("case " << i);
      compare_layer([&] { return std::make_unique<Conv2d>(c.out, c.kernel, c.stride, c.padding, c.bias); }, {c.in},
                    batch, 10 + i);
    }
  }
}

TEST_CASE("gpu convolution plans are made once per full shape", "[gpu][conv2d]") {
  Context ctx(Device::cuda(0));
  CudnnPlans& plans = *ctx.cuda()->plans;
  ConvCase a = make_conv(Device::cuda(0), 4);
  run_conv(ctx, a);
  REQUIRE(plans.conv_plan_count() == 1);
  run_conv(ctx, a);
  REQUIRE(plans.conv_plan_count() == 1);
  ConvCase b = make_conv(Device::cuda(0), 3);  // another batch: another plan
  run_conv(ctx, b);
  REQUIRE(plans.conv_plan_count() == 2);
  ctx.synchronize();
}

TEST_CASE("gpu deterministic convolutions repeat bit for bit", "[gpu][conv2d]") {
  ContextOptions options;
  options.deterministic = true;
  Context ctx(Device::cuda(0), options);
  ConvCase c = make_conv(Device::cuda(0), 5);
  run_conv(ctx, c);
  auto y = c.y.to_vector(), dx = c.dx.to_vector(), dw = c.dw.to_vector();
  for (int repeat = 0; repeat < 3; ++repeat) {
    run_conv(ctx, c);
    REQUIRE(same_bits(c.y.to_vector(), y));
    REQUIRE(same_bits(c.dx.to_vector(), dx));
    REQUIRE(same_bits(c.dw.to_vector(), dw));
  }
}

TEST_CASE("gpu convolution runs without any workspace", "[gpu][conv2d]") {
  ContextOptions options;
  options.workspace_limit_bytes = 0;
  options.precision = Precision::fp32;  // compared with the CPU reference
  Context ctx(Device::cuda(0), options);
  Context cpu(Device::cpu());
  ConvCase g = make_conv(Device::cuda(0), 2), c = make_conv(Device::cpu(), 2);
  run_conv(ctx, g);
  run_conv(cpu, c);
  require_close_scaled(g.y.to_vector(), c.y.to_vector(), 1e-4, "output");
  require_close_scaled(g.dx.to_vector(), c.dx.to_vector(), 1e-4, "input gradient");
  require_close_scaled(g.dw.to_vector(), c.dw.to_vector(), 1e-4, "weight gradient");
  REQUIRE(ctx.cuda()->workspace_bytes() == 0);
}

TEST_CASE("gpu conv2d ops take an empty batch", "[gpu][conv2d]") {
  Context ctx(Device::cuda(0));
  Device d = Device::cuda(0);
  Tensor x = Tensor::empty(Shape{0, 3, 5, 5}, d), w = random_tensor(Shape{4, 3, 3, 3}, 5, -1.0f, 1.0f, d);
  Tensor y = Tensor::empty(Shape{0, 4, 5, 5}, d);
  Tensor dw = random_tensor(Shape{4, 3, 3, 3}, 6, -1.0f, 1.0f, d), db = random_tensor(Shape{4}, 7, -1.0f, 1.0f, d);
  ops::conv2d_forward(ctx, x, w, nullptr, y, 1, 1);
  ops::conv2d_backward_filter(ctx, x, y, dw, 1, 1);
  ops::conv2d_backward_bias(ctx, y, db);
  for (float v : dw.to_vector()) REQUIRE(v == 0.0f);
  for (float v : db.to_vector()) REQUIRE(v == 0.0f);
}
