#include <catch2/catch.hpp>

#include "ops/tensor_ops.h"
#include "layers/add.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

TEST_CASE("add sums its two inputs", "[add]") {
  for (int64_t batch : {1, 3}) {
    LayerHarness h(std::make_unique<Add>(), {Shape{3, 3, 5}, Shape{3, 3, 5}}, batch, 1);
    std::vector<float> a = h.inputs[0].to_vector(), b = h.inputs[1].to_vector(), y = h.forward().to_vector();
    REQUIRE(h.output.shape() == Shape{batch, 3, 3, 5});
    for (size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == a[i] + b[i]);
  }
}

TEST_CASE("add gradients match finite differences", "[add][gradcheck]") {
  LayerHarness h(std::make_unique<Add>(), {Shape{3, 3, 5}, Shape{3, 3, 5}}, 3, 2);
  check_gradients(h, {.max_points = 1000});
  check_accumulate_mode(h);
  LayerHarness flat(std::make_unique<Add>(), {Shape{7}, Shape{7}}, 1, 3);
  check_gradients(flat, {.max_points = 1000});
  check_accumulate_mode(flat);
}

TEST_CASE("add backward honours each input's grad mode, in order, on a shared buffer", "[add]") {
  // The graph gives add(x, x) one gradient buffer with modes write then add.
  Context ctx(Device::cpu());
  Add add;
  Tensor x = random_tensor(Shape{2, 3, 5}, 4), y = Tensor::zeros(Shape{2, 3, 5});
  Tensor dy = random_tensor(Shape{2, 3, 5}, 5);
  Tensor dx = random_tensor(Shape{2, 3, 5}, 6);  // stale values the write must replace
  std::vector<Tensor> grads = {dx, dx};
  add.backward(ctx, {x, x}, y, dy, grads, {GradMode::write, GradMode::add});
  std::vector<float> got = dx.to_vector(), g = dy.to_vector();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == 2.0f * g[i]);

  // An undefined gradient is skipped; the other is still written.
  Tensor only = Tensor::zeros(Shape{2, 3, 5});
  std::vector<Tensor> one = {Tensor(), only};
  add.backward(ctx, {x, x}, y, dy, one, {GradMode::write, GradMode::write});
  REQUIRE(only.to_vector() == g);
}

TEST_CASE("add rejects inputs that do not match, naming the layer and shapes", "[add][errors]") {
  Add add;
  add.name = "res1";
  REQUIRE_THROWS_WITH(add.output_shape({Shape{3, 5, 5}, Shape{3, 5, 4}}),
                      Catch::Contains("add 'res1' (input [3, 5, 5], [3, 5, 4])") && Catch::Contains("same shape"));
  REQUIRE_THROWS_WITH(add.output_shape({Shape{3, 5, 5}}),
                      Catch::Contains("add 'res1' (input [3, 5, 5])") && Catch::Contains("two inputs"));
  Context ctx(Device::cpu());
  Tensor a = Tensor::zeros(Shape{2, 6}), b = Tensor::zeros(Shape{2, 3, 2}), y = Tensor::zeros(Shape{2, 6});
  REQUIRE_THROWS_WITH(ops::add(ctx, a, b, y), Catch::Contains("add: shapes [2, 6] and [2, 3, 2] differ"));
}
