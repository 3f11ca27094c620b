// Batch norm + residual add + ReLU fused on the CPU: equal bit for
// bit to the unfused sequence it replaces, its layer's gradients against
// finite differences, the unfused passes in evaluation, and clear errors.
#include <catch2/catch.hpp>

#include <cstring>

#include "base/error.h"
#include "layers/batchnorm2d.h"
#include "ops/batchnorm.h"
#include "runtime/context.h"
#include "support/bn_relu_check.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

TEST_CASE("fused batch norm + add + relu equals batch norm, add, relu on the cpu", "[batchnorm2d][fused]") {
  // Odd planes, 1x1 planes, and many samples.
  for (const Shape& shape : {Shape{5, 3, 7, 6}, Shape{2, 4, 1, 1}, Shape{64, 3, 16, 16}}) {
    INFO("shape " << shape.str());
    check_fused_bn_add_relu(Device::cpu(), shape, 11);
  }
}

TEST_CASE("batch norm + add + relu layer gradients match finite differences away from the kink",
          "[batchnorm2d][fused][gradcheck]") {
  LayerHarness h(BatchNorm2d::with_add_relu(), {Shape{5, 3, 5}, Shape{5, 3, 5}}, 3, 12);
  // Move each shortcut value so that bn(x) + shortcut lies at least 0.2 from
  // 0, where the ReLU's derivative jumps: a step of h = 1e-2 in any input
  // moves bn(x) by far less.
  Tensor& s = h.inputs[1];
  std::vector<float> shortcut = s.to_vector();
  Tensor z = Tensor::empty(h.output.shape());
  {
    // bn(x) alone: the layer with a zero shortcut, before the ReLU clips it,
    // is what an unfused batch norm gives.
    LayerHarness plain(std::make_unique<BatchNorm2d>(), {Shape{5, 3, 5}}, 3, 12);
    plain.inputs[0].copy_from(h.inputs[0]);
    z.copy_from(plain.forward(Mode::train));
  }
  const std::vector<float> bn = z.to_vector();
  for (size_t i = 0; i < shortcut.size(); ++i) shortcut[i] += bn[i] + shortcut[i] >= 0.0f ? 0.2f : -0.2f;
  s.copy_from(Tensor::from_vector(s.shape(), shortcut));
  check_gradients(h, {.max_points = 1000});
  check_accumulate_mode(h);
}

TEST_CASE("batch norm + add + relu layer in evaluation equals the three layers", "[batchnorm2d][fused]") {
  const Shape sample{4, 3, 5};
  LayerHarness fused(BatchNorm2d::with_add_relu(), {sample, sample}, 3, 31);
  LayerHarness bn(std::make_unique<BatchNorm2d>(), {sample}, 3, 31);
  bn.inputs[0].copy_from(fused.inputs[0]);
  bn.arenas.params.copy_from(fused.arenas.params);
  const std::vector<float> rm{0.5f, -1.0f, 0.0f, 2.0f}, rv{1.0f, 0.25f, 4.0f, 0.01f};
  for (LayerHarness* h : {&fused, &bn}) {
    BatchNormState* st = h->layer().batch_norm_state();
    st->running_mean.copy_from(Tensor::from_vector(Shape{4}, rm));
    st->running_var.copy_from(Tensor::from_vector(Shape{4}, rv));
  }
  const std::vector<float> y = fused.forward(Mode::eval).to_vector();
  const std::vector<float> z = bn.forward(Mode::eval).to_vector(), s = fused.inputs[1].to_vector();
  int64_t zeros = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const float expected = z[i] + s[i] > 0.0f ? z[i] + s[i] : 0.0f;
    REQUIRE(std::memcmp(&y[i], &expected, sizeof(float)) == 0);
    zeros += y[i] == 0.0f;
  }
  CHECK(zeros > 0);
  CHECK(zeros < static_cast<int64_t>(y.size()));
}

TEST_CASE("batch norm + add + relu refuses a shortcut of another shape", "[batchnorm2d][fused]") {
  CHECK_THROWS_WITH(BatchNorm2d::with_add_relu()->output_shape({Shape{3, 4, 4}, Shape{3, 4, 5}}),
                    Catch::Contains("shortcut"));
  CHECK_THROWS_WITH(BatchNorm2d::with_add_relu()->output_shape({Shape{3, 4, 4}}), Catch::Contains("two inputs"));
  Context ctx(Device::cpu());
  const Shape shape{2, 3, 4, 4};
  Tensor x = Tensor::zeros(shape), dy = Tensor::zeros(shape), y = Tensor::zeros(shape);
  Tensor bad = Tensor::zeros(Shape{2, 3, 4, 5});
  Tensor c1 = Tensor::zeros(Shape{3}), c2 = Tensor::zeros(Shape{3}), c3 = Tensor::zeros(Shape{3});
  Tensor g1 = Tensor::zeros(Shape{3}), g2 = Tensor::zeros(Shape{3});
  CHECK_THROWS_WITH(ops::batchnorm_add_relu_backward(ctx, x, y, dy, c1, c2, c3, g1, g2, nullptr, false, &bad, false),
                    Catch::Contains("batchnorm_add_relu_backward") && Catch::Contains("shortcut gradient"));
  Tensor same = Tensor::zeros(Shape{2, 3, 4, 4});
  CHECK_THROWS_WITH(ops::batchnorm_add_relu_backward(ctx, x, y, dy, c1, c2, c3, g1, g2, &same, false, &same, false),
                    Catch::Contains("separate buffers"));
  Tensor out = Tensor::zeros(Shape{2, 3, 4, 4}), m1 = Tensor::zeros(Shape{3}), m2 = Tensor::zeros(Shape{3});
  CHECK_THROWS_WITH(ops::batchnorm_add_relu_forward_train(ctx, x, bad, c1, c2, 1e-5f, out, m1, m2, c3, g1),
                    Catch::Contains("shortcut"));
}
