// The models of issue 16 on the GPU against the CPU: one train_step of each at
// a tiny input (loss, accuracy, every gradient, every batch statistic).
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

namespace {

std::unique_ptr<Graph> make_model(const std::string& name, const Shape& input, Device device) {
  auto g = build_model(name, input, 3, ModelOptions{.dropout = false});
  g->finalize(device, 7);
  return g;
}

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
      REQUIRE(m_gpu.loss_sum == Approx(m_cpu.loss_sum).epsilon(1e-4));
      REQUIRE(m_gpu.correct == m_cpu.correct);
      // Per tensor, scaled by its RMS: deep networks sum in another order on
      // the GPU, and the rounding grows with the terms, not the result.
      std::vector<float> g_gpu = gpu->arenas().grads.to_vector(), g_cpu = cpu->arenas().grads.to_vector();
      for (const ParamEntry& e : cpu->arenas().entries()) {
        INFO("gradient of " << e.name);
        require_close_scaled({g_gpu.begin() + e.offset, g_gpu.begin() + e.offset + e.shape.numel()},
                             {g_cpu.begin() + e.offset, g_cpu.begin() + e.offset + e.shape.numel()}, 2e-3, "gradient");
      }
      auto gpu_bn = gpu->batch_norms(), cpu_bn = cpu->batch_norms();
      REQUIRE(gpu_bn.size() == cpu_bn.size());
      for (size_t i = 0; i < cpu_bn.size(); ++i) {
        INFO("batch norm " << cpu_bn[i]->name);
        require_close_scaled(gpu_bn[i]->batch_mean.to_vector(), cpu_bn[i]->batch_mean.to_vector(), 1e-3, "batch mean");
        require_close_scaled(gpu_bn[i]->batch_var.to_vector(), cpu_bn[i]->batch_var.to_vector(), 1e-3,
                             "batch variance");
      }
    }
  }
}
