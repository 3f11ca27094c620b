// Pooling on the GPU in FP32: the layers against the CPU reference
// (layer_compare.h), NaN through max pooling. NHWC: test_gpu_pool_nhwc.cpp;
// bf16 and adaptive average pooling: test_gpu_pool_bf16.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>

#include "layer_compare.h"
#include "layers/pool.h"
#include "ops/pool.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::layer_compare::compare_layer;

TEST_CASE("gpu pooling equals the cpu reference", "[gpu][layers][pool]") {
  for (int64_t batch : {1, 3}) {
    compare_layer([] { return std::make_unique<MaxPool2d>(2); }, {Shape{3, 5, 7}}, batch, 40);
    compare_layer([] { return std::make_unique<MaxPool2d>(3, 2, 1); }, {Shape{2, 9, 9}}, batch, 41);
    compare_layer([] { return std::make_unique<MaxPool2d>(2, 1, 1); }, {Shape{3, 4, 5}}, batch, 42);
    compare_layer([] { return std::make_unique<AvgPool2d>(2); }, {Shape{3, 5, 7}}, batch, 43);
    compare_layer([] { return std::make_unique<AvgPool2d>(3, 2, 1); }, {Shape{2, 9, 9}}, batch, 44);
    compare_layer([] { return std::make_unique<GlobalAvgPool>(); }, {Shape{5, 7, 3}}, batch, 45);
    compare_layer([] { return std::make_unique<GlobalAvgPool>(); }, {Shape{3, 32, 32}}, batch, 46);
    compare_layer([] { return std::make_unique<AdaptiveAvgPool2d>(7, 7); }, {Shape{5, 13, 11}}, batch, 47);
    compare_layer([] { return std::make_unique<AdaptiveAvgPool2d>(7, 7); }, {Shape{4, 1, 1}}, batch, 48);
  }
}

TEST_CASE("gpu max pooling propagates NaN as the cpu does", "[gpu][layers][pool]") {
  Context cpu_ctx(Device::cpu()), gpu_ctx(Device::cuda(0));
  std::vector<float> host = lockstep::testing::random_values(2 * 4 * 4, 50);
  host[5] = std::numeric_limits<float>::quiet_NaN();  // plane 0, row 1, column 1
  Tensor x = Tensor::from_vector(Shape{1, 2, 4, 4}, host);
  Tensor gx = x.to(Device::cuda(0));
  PoolWindow window{2, 2, 0};
  Tensor y = Tensor::empty(Shape{1, 2, 2, 2}), gy = Tensor::empty(Shape{1, 2, 2, 2}, Device::cuda(0));
  ops::max_pool2d_forward(cpu_ctx, x, y, window);
  ops::max_pool2d_forward(gpu_ctx, gx, gy, window);
  std::vector<float> c = y.to_vector(), g = gy.to_vector();
  REQUIRE(std::isnan(c[0]));
  for (size_t i = 0; i < c.size(); ++i) {
    INFO("output " << i);
    REQUIRE(std::isnan(g[i]) == std::isnan(c[i]));
    if (!std::isnan(c[i])) REQUIRE(g[i] == c[i]);
  }
}
