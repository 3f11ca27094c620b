// flatten on the GPU: the layer against the CPU reference (layer_compare.h).
#include <catch2/catch.hpp>

#include <memory>

#include "layer_compare.h"
#include "layers/flatten.h"

using namespace lockstep;
using lockstep::testing::layer_compare::compare_layer;

TEST_CASE("gpu flatten layer equals the cpu reference", "[gpu][layers][flatten][handwritten]") {
  for (int64_t batch : {1, 3}) {
    compare_layer([] { return std::make_unique<Flatten>(); }, {Shape{3, 5, 7}}, batch, 62);
  }
}
