#include <catch2/catch.hpp>

#include "base/error.h"
#include "ops/linear.h"
#include "layers/linear.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

TEST_CASE("linear declares weight [O, F] then bias [O]", "[linear]") {
  auto specs = Linear(5, true).parameter_specs({Shape{7}});
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].name == "weight");
  CHECK(specs[0].shape == Shape{5, 7});
  CHECK(specs[0].init == Init::fan_in_uniform);
  CHECK(specs[0].decay);
  CHECK(specs[1].name == "bias");
  CHECK(specs[1].shape == Shape{5});
  CHECK(specs[1].init == Init::fan_in_uniform);
  CHECK_FALSE(specs[1].decay);
  CHECK(specs[1].fan_in == 7);
  REQUIRE(Linear(5, false).parameter_specs({Shape{7}}).size() == 1);
  REQUIRE(Linear(5).output_shape({Shape{7}}) == Shape{5});
}

TEST_CASE("linear forward matches y = x W^T + b", "[linear]") {
  for (bool bias : {true, false}) {
    INFO((bias ? "with bias" : "without bias"));
    const int64_t n = 3, f = 7, o = 5;
    LayerHarness h(std::make_unique<Linear>(o, bias), {Shape{f}}, n, 3);
    std::vector<float> x = h.inputs[0].to_vector(), w = h.arenas.param(0).to_vector();
    std::vector<float> b = bias ? h.arenas.param(1).to_vector() : std::vector<float>(o, 0.0f);
    h.output.copy_from(random_tensor(h.output.shape(), 5, 100.0f, 200.0f));
    std::vector<float> y = h.forward().to_vector();
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < o; ++j) {
        double expected = b[j];
        for (int64_t k = 0; k < f; ++k) expected += double(x[r * f + k]) * w[j * f + k];
        REQUIRE(y[r * o + j] == Approx(expected).margin(1e-5).epsilon(1e-5));
      }
  }
}

TEST_CASE("linear gradients of input, weight and bias match finite differences", "[linear][gradcheck]") {
  for (int64_t batch : {1, 3}) {
    for (bool bias : {true, false}) {
      INFO("batch " << batch << (bias ? ", bias" : ", no bias"));
      LayerHarness h(std::make_unique<Linear>(5, bias), {Shape{7}}, batch, 13);
      check_gradients(h, {.max_points = 200});
    }
  }
}

TEST_CASE("linear adds its input gradient in accumulate mode", "[linear]") {
  LayerHarness h(std::make_unique<Linear>(5), {Shape{7}}, 3, 17);
  check_accumulate_mode(h);
}

TEST_CASE("linear ops on an empty batch write zero parameter gradients", "[linear]") {
  Context ctx(Device::cpu());
  Tensor x = Tensor::zeros(Shape{0, 7}), dy = Tensor::zeros(Shape{0, 5});
  Tensor dw = random_tensor(Shape{5, 7}, 1), db = random_tensor(Shape{5}, 2);
  ops::linear_backward_weight(ctx, x, dy, dw);
  ops::linear_backward_bias(ctx, dy, db);
  for (float v : dw.to_vector()) REQUIRE(v == 0.0f);
  for (float v : db.to_vector()) REQUIRE(v == 0.0f);
}

TEST_CASE("linear rejects inputs that are not flat, naming the layer and the shapes", "[linear][errors]") {
  using Catch::Contains;
  Linear fc(10);
  fc.name = "fc";
  std::vector<Shape> image{Shape{3, 5, 5}};
  REQUIRE_THROWS_AS(fc.output_shape(image), Error);
  REQUIRE_THROWS_WITH(fc.output_shape(image), Contains("linear 'fc' (input [3, 5, 5])") && Contains("flat [F]"));
  std::vector<Shape> flat{Shape{7}};
  REQUIRE_THROWS_WITH(Linear(0).output_shape(flat), Contains("[7]") && Contains("0 output features"));

  Context ctx(Device::cpu());
  Tensor x = Tensor::zeros(Shape{2, 7}), w = Tensor::zeros(Shape{5, 6}), y = Tensor::zeros(Shape{2, 5});
  REQUIRE_THROWS_WITH(ops::linear_forward(ctx, x, w, nullptr, y),
                      Contains("linear forward") && Contains("[2, 7]") && Contains("[5, 6]"));
}
