// The seed workloads' models on the GPU against the CPU: one train_step of
// each at a tiny input (loss, accuracy, every gradient, every batch statistic).
#include <catch2/catch.hpp>

#include <string>

#include "distributed/replica_manager.h"
#include "gpu_compare.h"
#include "layers/models.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::reference_options;
using lockstep::testing::random_values;
using lockstep::testing::require_close_scaled;
using lockstep::testing::require_normwise_close;

namespace {

std::unique_ptr<Graph> make_model(const std::string& name, const Shape& input, Device device) {
  auto g = build_model(name, input, 3, ModelOptions{.dropout = false});
  g->finalize(device, 7);
  return g;
}

// Four samples through batch norm over as few as 4 values per channel (vgg's
// 1x1 maps, resnet50's 2x2) magnify rounding: on an H200 in FP32 (FMA math),
// whose cuDNN algorithms sum in orders of their own, the loss differed by
// 1.6e-4 and single gradient elements by up to 2.5% of their tensor's RMS
// (vgg16-bn's first convolution). A real GPU is held to the loss and to each
// gradient tensor as a whole; the emulator, which sums nearer the CPU's
// order, element by element. The whole-tensor bound is resnet50's at 3x8x8,
// whose 1x1 maps leave 4 values per batch-norm channel: its stem batch
// norm's weight gradient, at the end of 50 layers of backward, lay 2.1%,
// 2.1% and 3.3% from the CPU's in three runs on an H200 (cuDNN's
// non-deterministic FP32 algorithms vary from run to run as much); a wrong
// gradient lies 100% away.
#if LOCKSTEP_GPU_EMULATED
constexpr double kLossTolerance = 1e-4;
#else
constexpr double kLossTolerance = 1e-3;
constexpr double kGradientTolerance = 5e-2;
#endif

}  // namespace

TEST_CASE("resnet50 vgg16 vgg16-bn vgg-f and deep-cnn train_step on the gpu equals the cpu", "[gpu][graph][models]") {
  struct Case {
    std::string name;
    Shape sample;
  };
  // 64x64 takes resnet50's 7x7 stem and max pool; 8x8 its CIFAR stem.
  for (const Case& c :
       {Case{"resnet50", Shape{3, 8, 8}}, Case{"resnet50", Shape{3, 64, 64}}, Case{"vgg16", Shape{3, 8, 8}},
        Case{"vgg16-bn", Shape{3, 8, 8}}, Case{"vgg-f", Shape{3, 8, 8}}, Case{"deep-cnn", Shape{3, 16, 16}}}) {
    DYNAMIC_SECTION(c.name << " " << c.sample.str()) {
      auto cpu = make_model(c.name, c.sample, Device::cpu());
      auto gpu = make_model(c.name, c.sample, Device::cuda(0));
      REQUIRE(gpu->arenas().params.to_vector() == cpu->arenas().params.to_vector());
      const int64_t batch = 4;
      Tensor images = Tensor::from_vector(Shape{batch, c.sample[0], c.sample[1], c.sample[2]},
                                          random_values(batch * c.sample.numel(), 11));
      Tensor labels = Tensor::from_labels({0, 1, 2, 1});
      Context cpu_ctx(Device::cpu()), gpu_ctx(Device::cuda(0), reference_options());
      StepMetrics m_cpu = cpu->train_step(cpu_ctx, StepInfo{}, images, labels, 1.0f / batch).metrics();
      StepMetrics m_gpu =
          gpu->train_step(gpu_ctx, StepInfo{}, images.to(Device::cuda(0)), labels.to(Device::cuda(0)), 1.0f / batch)
              .metrics();
      REQUIRE(m_gpu.count == m_cpu.count);
      REQUIRE(m_gpu.loss_sum == Approx(m_cpu.loss_sum).epsilon(kLossTolerance));
      REQUIRE(m_gpu.correct == m_cpu.correct);
      std::vector<float> g_gpu = gpu->arenas().grads.to_vector(), g_cpu = cpu->arenas().grads.to_vector();
      for (const ParamEntry& e : cpu->arenas().entries()) {
        INFO("gradient of " << e.name);
        const std::vector<float> a(g_gpu.begin() + e.offset, g_gpu.begin() + e.offset + e.shape.numel()),
            b(g_cpu.begin() + e.offset, g_cpu.begin() + e.offset + e.shape.numel());
#if LOCKSTEP_GPU_EMULATED
        // Per element, scaled by the tensor's RMS: the emulated cuDNN sums
        // in another order, and the rounding grows with the terms.
        require_close_scaled(a, b, 2e-3, "gradient");
#else
        require_normwise_close(a, b, kGradientTolerance, "gradient");
#endif
      }
      auto gpu_bn = gpu->batch_norms(), cpu_bn = cpu->batch_norms();
      REQUIRE(gpu_bn.size() == cpu_bn.size());
      for (size_t i = 0; i < cpu_bn.size(); ++i) {
        INFO("batch norm " << cpu_bn[i]->name);
#if LOCKSTEP_GPU_EMULATED
        require_close_scaled(gpu_bn[i]->batch_mean.to_vector(), cpu_bn[i]->batch_mean.to_vector(), 1e-3, "batch mean");
        require_close_scaled(gpu_bn[i]->batch_var.to_vector(), cpu_bn[i]->batch_var.to_vector(), 1e-3,
                             "batch variance");
#else
        // An H200: resnet50's stage4.2.c.bn variance 2.7e-3 off in one element.
        require_normwise_close(gpu_bn[i]->batch_mean.to_vector(), cpu_bn[i]->batch_mean.to_vector(),
                               kGradientTolerance, "batch mean");
        require_normwise_close(gpu_bn[i]->batch_var.to_vector(), cpu_bn[i]->batch_var.to_vector(),
                               kGradientTolerance, "batch variance");
#endif
      }
    }
  }
}
