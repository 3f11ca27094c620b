// batchnorm2d on the GPU (our kernels) in FP32: the layer against the CPU
// reference (layer_compare.h), the running-statistics update, an empty batch.
// NHWC: test_gpu_batchnorm2d_nhwc.cpp; bf16: test_gpu_batchnorm2d_bf16.cpp;
// fused with relu: test_gpu_batchnorm_relu.cpp, test_gpu_batchnorm_add_relu.cpp.
#include <catch2/catch.hpp>

#include <memory>

#include "gpu_compare.h"
#include "layer_compare.h"
#include "layers/batchnorm2d.h"
#include "ops/batchnorm.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::layer_compare::compare_layer;
using lockstep::testing::random_tensor;
using lockstep::testing::require_close;

TEST_CASE("gpu batchnorm2d equals the cpu reference", "[gpu][layers][batchnorm2d][handwritten]") {
  for (int64_t batch : {1, 3, 8}) {
    compare_layer([] { return std::make_unique<BatchNorm2d>(); }, {Shape{3, 5, 7}}, batch, 30);
    compare_layer([] { return std::make_unique<BatchNorm2d>(); }, {Shape{5, 4, 4}}, batch, 31);
  }
  // Many values per channel: several runs per channel in the statistics kernels.
  compare_layer([] { return std::make_unique<BatchNorm2d>(); }, {Shape{3, 32, 32}}, 20, 32);
  // A mean far from zero against the spread: the one pass shifts by one of
  // the channel's values (kernels/bn_math.h), so its variance keeps it.
  compare_layer([] { return std::make_unique<BatchNorm2d>(); }, {Shape{2, 9, 9}}, 5, 33, 1000.0f);
  compare_layer([] { return std::make_unique<BatchNorm2d>(); }, {Shape{2, 9, 9}}, 5, 34, 30000.0f);
  // Two values per channel, as resnet50's last blocks see at batch 2.
  compare_layer([] { return std::make_unique<BatchNorm2d>(); }, {Shape{4, 1, 1}}, 2, 35);
}

TEST_CASE("gpu running-statistics update equals the cpu reference", "[gpu][batchnorm2d][handwritten]") {
  Context cpu_ctx(Device::cpu()), gpu_ctx(Device::cuda(0));
  const int64_t c = 7;
  for (int64_t values : {int64_t(1), int64_t(0), int64_t(50)}) {
    INFO(values << " values per channel");
    BatchNormState cpu_state, gpu_state;
    cpu_state.momentum = gpu_state.momentum = 0.3f;
    cpu_state.running_mean = random_tensor(Shape{c}, 1);
    cpu_state.running_var = random_tensor(Shape{c}, 2, 0.5f, 2.0f);
    gpu_state.running_mean = cpu_state.running_mean.to(Device::cuda(0));
    gpu_state.running_var = cpu_state.running_var.to(Device::cuda(0));
    Tensor mean = random_tensor(Shape{c}, 3), var = random_tensor(Shape{c}, 4, 0.0f, 3.0f);
    ops::batchnorm_update_running(cpu_ctx, cpu_state, mean, var, values);
    ops::batchnorm_update_running(gpu_ctx, gpu_state, mean.to(Device::cuda(0)), var.to(Device::cuda(0)), values);
    require_close(gpu_state.running_mean.to_vector(), cpu_state.running_mean.to_vector(), 1e-6, 1e-7);
    require_close(gpu_state.running_var.to_vector(), cpu_state.running_var.to_vector(), 1e-6, 1e-7);
  }
}

TEST_CASE("gpu batch statistics of an empty batch are zero", "[gpu][batchnorm2d][handwritten]") {
  Context ctx(Device::cuda(0));
  Device d = Device::cuda(0);
  Tensor x = Tensor::empty(Shape{0, 3, 4, 4}, d), y = Tensor::empty(Shape{0, 3, 4, 4}, d);
  Tensor gamma = random_tensor(Shape{3}, 1, -1.0f, 1.0f, d), beta = random_tensor(Shape{3}, 2, -1.0f, 1.0f, d);
  Tensor m = random_tensor(Shape{3}, 3, -1.0f, 1.0f, d), v = random_tensor(Shape{3}, 4, -1.0f, 1.0f, d);
  Tensor sm = Tensor::empty(Shape{3}, d), si = Tensor::empty(Shape{3}, d);
  ops::batchnorm_forward_train(ctx, x, gamma, beta, 1e-5f, y, m, v, sm, si);
  for (float value : m.to_vector()) REQUIRE(value == 0.0f);
  for (float value : v.to_vector()) REQUIRE(value == 0.0f);
}
