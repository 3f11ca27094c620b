// linear on the GPU (cuBLAS) in FP32: the layer against the CPU reference
// (layer_compare.h) and an empty batch. bf16: test_gpu_linear_bf16.cpp.
#include <catch2/catch.hpp>

#include <memory>

#include "layer_compare.h"
#include "layers/linear.h"
#include "ops/linear.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::layer_compare::compare_layer;
using lockstep::testing::random_tensor;

TEST_CASE("gpu linear equals the cpu reference", "[gpu][layers][linear]") {
  for (int64_t batch : {1, 3, 17})
    for (bool bias : {true, false}) {
      compare_layer([&] { return std::make_unique<Linear>(5, bias); }, {Shape{7}}, batch, 20);
      compare_layer([&] { return std::make_unique<Linear>(3, bias); }, {Shape{37}}, batch, 21);
    }
}

TEST_CASE("gpu linear ops take an empty batch", "[gpu][linear]") {
  Context ctx(Device::cuda(0));
  Device d = Device::cuda(0);
  Tensor lx = Tensor::empty(Shape{0, 6}, d), lw = random_tensor(Shape{2, 6}, 8, -1.0f, 1.0f, d);
  Tensor ldy = Tensor::empty(Shape{0, 2}, d), ldw = random_tensor(Shape{2, 6}, 9, -1.0f, 1.0f, d);
  Tensor ldb = random_tensor(Shape{2}, 10, -1.0f, 1.0f, d);
  ops::linear_backward_weight(ctx, lx, ldy, ldw);
  ops::linear_backward_bias(ctx, ldy, ldb);
  for (float v : ldw.to_vector()) REQUIRE(v == 0.0f);
  for (float v : ldb.to_vector()) REQUIRE(v == 0.0f);
}
