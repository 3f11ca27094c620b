#pragma once
// Test support: runs one layer alone on random inputs, and checks its
// gradients against central finite differences.
#include <memory>
#include <random>
#include <vector>

#include "runtime/arena.h"
#include "runtime/context.h"
#include "layers/layer.h"

namespace lockstep::testing {

// Uniform values in [lo, hi) from a seeded generator.
std::vector<float> random_values(int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f,
                     Device device = Device::cpu());

// A context compared with the CPU reference: precision fp32 (strict). tf32,
// the default, lets a GPU's libraries round their operands to TF32, which
// puts them ~1e-3 off the CPU's FP32 (test_gpu_precision.cpp checks tf32 on its own).
ContextOptions reference_options();

// Prepends the batch extent to a per-sample shape.
Shape with_batch(int64_t n, const Shape& per_sample);

// One layer with its own arenas, inputs and gradient buffers.
class LayerHarness {
public:
  LayerHarness(std::unique_ptr<Layer> layer, std::vector<Shape> sample_shapes, int64_t batch, uint64_t seed,
               Device device = Device::cpu());

  Tensor& forward(Mode mode = Mode::train);
  // Runs backward with `output_grad`; input gradients are written (or added
  // when `mode` is add) into input_grads.
  void backward(const Tensor& output_grad, GradMode mode = GradMode::write);

  Layer& layer() { return *layer_; }
  Context ctx;  // made with reference_options()
  StepInfo step;  // the training step forward passes belong to (dropout keys its mask by it)
  std::vector<Tensor> inputs, input_grads;
  Tensor output;
  ParameterArenas arenas;
  Tensor state;

private:
  std::unique_ptr<Layer> layer_;
};

struct GradCheckOptions {
  double step = 1e-2;       // central-difference step h
  double rtol = 1e-2;       // float forward passes: the difference quotient carries ~1e-7*|L|/h of rounding
  double atol = 1e-3;
  int max_points = 60;      // elements checked per tensor (spread over the tensor)
  Mode mode = Mode::train;
};

// Checks d(sum(output * R))/d(every input and parameter) from backward against
// central differences, with R a fixed random tensor. Fails the current Catch
// test case (REQUIRE) on the first mismatch and names the tensor and element.
void check_gradients(LayerHarness& harness, const GradCheckOptions& options = {});

// Checks that backward in GradMode::add adds exactly the GradMode::write result
// to what the input-gradient buffers held.
void check_accumulate_mode(LayerHarness& harness);

}  // namespace lockstep::testing
