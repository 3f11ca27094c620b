// Batch norm + ReLU fused on the CPU: equal bit for bit to the unfused
// sequence it replaces, and clear errors on bad shapes.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "ops/batchnorm.h"
#include "runtime/context.h"
#include "support/bn_relu_check.h"

using namespace lockstep;

TEST_CASE("fused batch norm + relu equals batch norm then relu on the cpu", "[batchnorm2d][fused]") {
  // Odd planes, 1x1 planes, and many samples.
  for (const Shape& shape : {Shape{5, 3, 7, 6}, Shape{2, 4, 1, 1}, Shape{64, 3, 16, 16}}) {
    INFO("shape " << shape.str());
    testing::check_fused_bn_relu(Device::cpu(), shape, 11);
  }
}

TEST_CASE("fused batch norm + relu backward refuses an output of another shape", "[batchnorm2d][fused]") {
  Context ctx(Device::cpu());
  Tensor x = Tensor::zeros(Shape{2, 3, 4, 4}), dy = Tensor::zeros(Shape{2, 3, 4, 4});
  Tensor y = Tensor::zeros(Shape{2, 3, 4, 5});
  Tensor c1 = Tensor::zeros(Shape{3}), c2 = Tensor::zeros(Shape{3}), c3 = Tensor::zeros(Shape{3});
  Tensor g1 = Tensor::zeros(Shape{3}), g2 = Tensor::zeros(Shape{3});
  CHECK_THROWS_WITH(ops::batchnorm_relu_backward(ctx, x, y, dy, c1, c2, c3, g1, g2, nullptr, false),
                    Catch::Contains("batchnorm_relu_backward") && Catch::Contains("output"));
}
