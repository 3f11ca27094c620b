#include <catch2/catch.hpp>

#include "layers/relu.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

TEST_CASE("relu forward keeps positives and zeroes negatives", "[relu]") {
  LayerHarness h(std::make_unique<ReLU>(), {Shape{2, 3, 5}}, 1, 1);
  h.inputs[0].copy_from(Tensor::from_vector(Shape{1, 2, 3, 5}, std::vector<float>(30, -0.5f)));
  h.inputs[0].data()[7] = 0.25f;
  Tensor& y = h.forward();
  for (int i = 0; i < 30; ++i) REQUIRE(y.data()[i] == (i == 7 ? 0.25f : 0.0f));
}

TEST_CASE("relu gradients match finite differences away from the kink", "[relu][gradcheck]") {
  LayerHarness h(std::make_unique<ReLU>(), {Shape{3, 3, 5}}, 2, 7);
  // Keep every input at least 2h from 0, where the derivative jumps.
  float* x = h.inputs[0].data();
  for (int64_t i = 0; i < h.inputs[0].numel(); ++i) x[i] = x[i] >= 0 ? x[i] + 0.05f : x[i] - 0.05f;
  check_gradients(h, {.max_points = 1000});
  check_accumulate_mode(h);
}
