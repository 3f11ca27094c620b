// dropout on the GPU: the layer against the CPU reference (layer_compare.h)
// and its masks bit for bit.
#include <catch2/catch.hpp>

#include <memory>

#include "layer_compare.h"
#include "layers/dropout.h"
#include "ops/dropout.h"

using namespace lockstep;
using lockstep::testing::layer_compare::compare_layer;

TEST_CASE("gpu dropout layer equals the cpu reference", "[gpu][layers][dropout][handwritten]") {
  for (int64_t batch : {1, 3}) {
    compare_layer([] { return std::make_unique<Dropout>(0.3f); }, {Shape{3, 5, 7}}, batch, 63);
    compare_layer([] { return std::make_unique<Dropout>(0.5f); }, {Shape{41}}, batch, 64);
  }
}

TEST_CASE("gpu dropout masks match the cpu bit for bit", "[gpu][layers][dropout][handwritten]") {
  // Ones in, so the output is exactly 0 or 1/(1-p) on both devices.
  Context cpu_ctx(Device::cpu()), gpu_ctx(Device::cuda(0));
  const StepInfo step{99, 3, 11};
  Shape shape{6, 3, 7, 5};
  Tensor x = Tensor::from_vector(shape, std::vector<float>(shape.numel(), 1.0f));
  Tensor gx = x.to(Device::cuda(0));
  Tensor y = Tensor::empty(shape), gy = Tensor::empty(shape, Device::cuda(0));
  ops::dropout_forward(cpu_ctx, step, x, y, 0.4f, 17);
  ops::dropout_forward(gpu_ctx, step, gx, gy, 0.4f, 17);
  std::vector<float> c = y.to_vector(), g = gy.to_vector();
  int64_t kept = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    INFO("element " << i);
    REQUIRE(g[i] == c[i]);
    kept += c[i] != 0.0f;
  }
  REQUIRE(kept > 0);
  REQUIRE(kept < static_cast<int64_t>(c.size()));
}
