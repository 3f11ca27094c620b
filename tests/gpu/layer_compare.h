#pragma once
// Every layer on the GPU against the CPU reference, forward and backward,
// from the same inputs and parameters (LayerHarness builds both from one
// seed): outputs, input gradients written and added, parameter gradients,
// batch statistics, and the evaluation-mode forward. TF32 is off (the
// default), so cuDNN and cuBLAS compute in FP32 and agree with the CPU to
// rounding: 1e-4 of each value plus 1e-4 of the tensor's RMS.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu_compare.h"
#include "layers/layer.h"
#include "support/layer_harness.h"

namespace lockstep::testing::layer_compare {

constexpr double kRtol = 1e-4;

using LayerMaker = std::function<std::unique_ptr<Layer>()>;

inline void compare(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::string& what) {
  require_close_scaled(gpu, cpu, kRtol, what);
}

constexpr StepInfo kStep{1234, 7, 5};

// Runs `make()` on both devices and compares everything it computes.
inline void compare_layer(const LayerMaker& make, const std::vector<Shape>& shapes, int64_t batch, uint64_t seed,
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

}  // namespace lockstep::testing::layer_compare
