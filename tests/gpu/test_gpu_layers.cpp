// Every layer on the GPU against the CPU reference, forward and backward,
// from the same inputs and parameters (LayerHarness builds both from one
// seed): outputs, input gradients written and added, parameter gradients,
// batch statistics, and the evaluation-mode forward. TF32 is off (the
// default), so cuDNN and cuBLAS compute in FP32 and agree with the CPU to
// rounding: 1e-4 of each value plus 1e-4 of the tensor's RMS.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>

#include "ops/dropout.h"
#include "ops/pool.h"
#include "gpu_compare.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool.h"
#include "layers/relu.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::LayerHarness;
using lockstep::testing::random_tensor;
using lockstep::testing::require_close_scaled;

namespace {

constexpr double kRtol = 1e-4;

using LayerMaker = std::function<std::unique_ptr<Layer>()>;

void compare(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::string& what) {
  require_close_scaled(gpu, cpu, kRtol, what);
}

constexpr StepInfo kStep{1234, 7, 5};

// Runs `make()` on both devices and compares everything it computes.
void compare_layer(const LayerMaker& make, const std::vector<Shape>& shapes, int64_t batch, uint64_t seed,
                   float input_offset = 0.0f) {
  LayerHarness cpu(make(), shapes, batch, seed, Device::cpu());
  LayerHarness gpu(make(), shapes, batch, seed, Device::cuda(0));
  cpu.step = kStep;
  gpu.step = kStep;
  const std::string type = cpu.layer().type();
  INFO(type << " on batch " << batch << ", input " << shapes[0].str());
  if (input_offset != 0.0f)
    for (size_t i = 0; i < cpu.inputs.size(); ++i) {
      std::vector<float> host = cpu.inputs[i].to_vector();
      for (float& v : host) v += input_offset;
      cpu.inputs[i].copy_from(Tensor::from_vector(cpu.inputs[i].shape(), host));
      gpu.inputs[i].copy_from(cpu.inputs[i]);
    }

  compare(gpu.forward(Mode::train).to_vector(), cpu.forward(Mode::train).to_vector(), type + " output");
  if (BatchNormState* c = cpu.layer().batch_norm_state()) {
    BatchNormState* g = gpu.layer().batch_norm_state();
    compare(g->batch_mean.to_vector(), c->batch_mean.to_vector(), "batch mean");
    require_close_scaled(g->batch_var.to_vector(), c->batch_var.to_vector(), 1e-5, "batch variance");
    REQUIRE(g->values_per_channel == c->values_per_channel);
  }

  Tensor r_cpu = random_tensor(cpu.output.shape(), seed + 5, -1.0f, 1.0f);
  Tensor r_gpu = r_cpu.to(Device::cuda(0));
  cpu.backward(r_cpu, GradMode::write);
  gpu.backward(r_gpu, GradMode::write);
  for (size_t i = 0; i < cpu.input_grads.size(); ++i)
    compare(gpu.input_grads[i].to_vector(), cpu.input_grads[i].to_vector(),
            type + " input gradient " + std::to_string(i) + " (written)");
  for (size_t i = 0; i < cpu.arenas.entries().size(); ++i)
    compare(gpu.arenas.grad(i).to_vector(), cpu.arenas.grad(i).to_vector(),
            type + " gradient of " + cpu.arenas.entries()[i].name);

  // Add mode on top of what the buffers hold.
  cpu.backward(r_cpu, GradMode::add);
  gpu.backward(r_gpu, GradMode::add);
  for (size_t i = 0; i < cpu.input_grads.size(); ++i)
    compare(gpu.input_grads[i].to_vector(), cpu.input_grads[i].to_vector(),
            type + " input gradient " + std::to_string(i) + " (added)");

  compare(gpu.forward(Mode::eval).to_vector(), cpu.forward(Mode::eval).to_vector(), type + " eval output");
}

}  // namespace

TEST_CASE("gpu conv2d equals the cpu reference", "[gpu][layers][conv]") {
  struct Case {
    Shape in;
    int64_t out;
    int kernel, stride, padding;
    bool bias;
  };
  std::vector<Case> cases = {
      {{3, 5, 7}, 5, 3, 1, 1, true},    // odd image, 'same' padding
      {{4, 9, 9}, 6, 3, 2, 0, false},   // stride 2, no padding
      {{5, 7, 7}, 3, 1, 1, 0, true},    // pointwise
      {{3, 8, 8}, 5, 1, 2, 0, false},   // the projection shortcut: 1x1 stride 2
      {{7, 6, 5}, 9, 5, 1, 2, true},    // 5x5
      {{3, 11, 11}, 7, 3, 2, 1, true},  // stride 2 with padding, odd size
  };
  for (int64_t batch : {1, 3}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      INFO("case " << i);
      compare_layer([&] { return std::make_unique<Conv2d>(c.out, c.kernel, c.stride, c.padding, c.bias); }, {c.in},
                    batch, 10 + i);
    }
  }
}

TEST_CASE("gpu linear equals the cpu reference", "[gpu][layers][linear]") {
  for (int64_t batch : {1, 3, 17})
    for (bool bias : {true, false}) {
      compare_layer([&] { return std::make_unique<Linear>(5, bias); }, {Shape{7}}, batch, 20);
      compare_layer([&] { return std::make_unique<Linear>(3, bias); }, {Shape{37}}, batch, 21);
    }
}

TEST_CASE("gpu batchnorm2d equals the cpu reference", "[gpu][layers][batchnorm][handwritten]") {
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

TEST_CASE("gpu element-wise layers equal the cpu reference", "[gpu][layers][handwritten]") {
  for (int64_t batch : {1, 3}) {
    compare_layer([] { return std::make_unique<ReLU>(); }, {Shape{3, 5, 7}}, batch, 60);
    compare_layer([] { return std::make_unique<Add>(); }, {Shape{3, 5, 7}, Shape{3, 5, 7}}, batch, 61);
    compare_layer([] { return std::make_unique<Flatten>(); }, {Shape{3, 5, 7}}, batch, 62);
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
