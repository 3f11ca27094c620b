// add on the GPU: the layer against the CPU reference (layer_compare.h).
#include <catch2/catch.hpp>

#include <memory>

#include "layer_compare.h"
#include "layers/add.h"

using namespace lockstep;
using lockstep::testing::layer_compare::compare_layer;

TEST_CASE("gpu add layer equals the cpu reference", "[gpu][layers][add][handwritten]") {
  for (int64_t batch : {1, 3}) {
    compare_layer([] { return std::make_unique<Add>(); }, {Shape{3, 5, 7}, Shape{3, 5, 7}}, batch, 61);
  }
}
