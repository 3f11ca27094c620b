#include <catch2/catch.hpp>

#include "layers/flatten.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

TEST_CASE("flatten keeps NCHW order in a C*H*W sample", "[flatten]") {
  for (int64_t batch : {1, 3}) {
    LayerHarness h(std::make_unique<Flatten>(), {Shape{3, 3, 5}}, batch, 1);
    REQUIRE(h.output.shape() == Shape{batch, 45});
    REQUIRE(h.forward().to_vector() == h.inputs[0].to_vector());
  }
  Flatten f;
  REQUIRE(f.output_shape({Shape{7}}) == Shape{7});
  REQUIRE(f.output_shape({Shape{2, 9}}) == Shape{18});
}

TEST_CASE("flatten gradients match finite differences", "[flatten][gradcheck]") {
  LayerHarness h(std::make_unique<Flatten>(), {Shape{3, 3, 5}}, 3, 2);
  check_gradients(h, {.max_points = 1000});
  check_accumulate_mode(h);
}

TEST_CASE("flatten rejects bad inputs, naming the layer and shapes", "[flatten][errors]") {
  Flatten f;
  f.name = "flat";
  REQUIRE_THROWS_WITH(f.output_shape({Shape{3, 0, 5}}), Catch::Contains("flatten 'flat' (input [3, 0, 5])"));
  REQUIRE_THROWS_WITH(f.output_shape({Shape{3}, Shape{3}}),
                      Catch::Contains("flatten 'flat' (input [3], [3])") && Catch::Contains("one input"));
}
