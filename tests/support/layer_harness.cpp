#include "support/layer_harness.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

namespace lockstep::testing {

std::vector<float> random_values(int64_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi, Device device) {
  return Tensor::from_vector(shape, random_values(shape.numel(), seed, lo, hi), device);
}

ContextOptions reference_options() {
  ContextOptions options;
  options.precision = Precision::fp32;
  return options;
}

Shape with_batch(int64_t n, const Shape& s) {
  switch (s.rank()) {
    case 1: return Shape{n, s[0]};
    case 2: return Shape{n, s[0], s[1]};
    default: return Shape{n, s[0], s[1], s[2]};
  }
}

LayerHarness::LayerHarness(std::unique_ptr<Layer> layer, std::vector<Shape> sample_shapes, int64_t batch,
                           uint64_t seed, Device device)
    : ctx(device, reference_options()), layer_(std::move(layer)) {
  if (layer_->name.empty()) layer_->name = "under_test";
  Shape out = layer_->output_shape(sample_shapes);
  for (size_t i = 0; i < sample_shapes.size(); ++i) {
    inputs.push_back(random_tensor(with_batch(batch, sample_shapes[i]), seed + 17 * i, -1.0f, 1.0f, device));
    input_grads.push_back(Tensor::zeros(with_batch(batch, sample_shapes[i]), device));
  }
  output = Tensor::zeros(with_batch(batch, out), device);
  arenas = ParameterArenas(layer_->parameter_specs(sample_shapes), device, true);
  initialize_parameters(arenas, seed + 1000);
  // Random parameters (not just the layer's init) so that no gradient is trivially zero.
  if (arenas.total() > 0) {
    std::vector<float> host = arenas.params.to_vector();
    auto noise = random_values(arenas.total(), seed + 2000, -0.5f, 0.5f);
    for (size_t i = 0; i < host.size(); ++i) host[i] += noise[i];
    arenas.params.copy_from(Tensor::from_vector(arenas.params.shape(), host, device));
  }
  ParameterArenas state_layout(layer_->state_specs(sample_shapes), device, false);
  initialize_parameters(state_layout, 0);
  state = state_layout.params;
  std::vector<Tensor> p, g, s;
  for (size_t i = 0; i < arenas.entries().size(); ++i) {
    p.push_back(arenas.param(i));
    g.push_back(arenas.grad(i));
  }
  for (const ParamEntry& e : state_layout.entries()) s.push_back(state.view(e.offset, e.shape));
  layer_->bind(p, g, s);
}

Tensor& LayerHarness::forward(Mode mode) {
  layer_->forward(ctx, inputs, output, mode, step);
  return output;
}

void LayerHarness::backward(const Tensor& output_grad, GradMode mode) {
  std::vector<GradMode> modes(inputs.size(), mode);
  layer_->backward(ctx, inputs, output, output_grad, input_grads, modes);
}

namespace {

double weighted_sum(const Tensor& output, const std::vector<float>& weights) {
  std::vector<float> out = output.to_vector();
  double sum = 0.0;
  for (size_t i = 0; i < out.size(); ++i) sum += static_cast<double>(out[i]) * weights[i];
  return sum;
}

// Checks one tensor's analytic gradient at spread-out elements.
void check_tensor(LayerHarness& h, Tensor values, const std::vector<float>& analytic, const std::vector<float>& r,
                  const std::string& what, const GradCheckOptions& o) {
  int64_t n = values.numel();
  int64_t stride = std::max<int64_t>(1, n / o.max_points);
  for (int64_t i = 0; i < n; i += stride) {
    std::vector<float> host = values.to_vector();
    float original = host[i];
    host[i] = static_cast<float>(original + o.step);
    values.copy_from(Tensor::from_vector(values.shape(), host, values.device()));
    double plus = weighted_sum(h.forward(o.mode), r);
    host[i] = static_cast<float>(original - o.step);
    values.copy_from(Tensor::from_vector(values.shape(), host, values.device()));
    double minus = weighted_sum(h.forward(o.mode), r);
    host[i] = original;
    values.copy_from(Tensor::from_vector(values.shape(), host, values.device()));
    double numeric = (plus - minus) / (2.0 * o.step);
    double error = std::abs(numeric - analytic[i]);
    INFO(h.layer().type() << " gradient of " << what << " element " << i << ": analytic " << analytic[i]
                          << ", numeric " << numeric);
    REQUIRE(error <= o.atol + o.rtol * std::abs(numeric));
  }
}

}  // namespace

void check_gradients(LayerHarness& h, const GradCheckOptions& o) {
  Tensor out = h.forward(o.mode);
  std::vector<float> r = random_values(out.numel(), 4242, -1.0f, 1.0f);
  Tensor r_tensor = Tensor::from_vector(out.shape(), r, out.device());
  for (auto& g : h.input_grads) g.zero();
  h.backward(r_tensor);
  std::vector<std::vector<float>> input_analytic;
  for (auto& g : h.input_grads) input_analytic.push_back(g.to_vector());
  std::vector<std::vector<float>> param_analytic;
  for (size_t i = 0; i < h.arenas.entries().size(); ++i) param_analytic.push_back(h.arenas.grad(i).to_vector());

  for (size_t i = 0; i < h.inputs.size(); ++i)
    check_tensor(h, h.inputs[i], input_analytic[i], r, "input " + std::to_string(i), o);
  for (size_t i = 0; i < h.arenas.entries().size(); ++i)
    check_tensor(h, h.arenas.param(i), param_analytic[i], r, "parameter " + h.arenas.entries()[i].name, o);
}

void check_accumulate_mode(LayerHarness& h) {
  Tensor out = h.forward(Mode::train);
  Tensor r = random_tensor(out.shape(), 77, -1.0f, 1.0f, out.device());
  for (auto& g : h.input_grads) g.zero();
  h.backward(r, GradMode::write);
  std::vector<std::vector<float>> written;
  for (auto& g : h.input_grads) written.push_back(g.to_vector());
  std::vector<std::vector<float>> before;
  for (size_t i = 0; i < h.input_grads.size(); ++i) {
    Tensor prior = random_tensor(h.input_grads[i].shape(), 99 + i, -1.0f, 1.0f, out.device());
    h.input_grads[i].copy_from(prior);
    before.push_back(prior.to_vector());
  }
  h.backward(r, GradMode::add);
  for (size_t i = 0; i < h.input_grads.size(); ++i) {
    std::vector<float> after = h.input_grads[i].to_vector();
    for (size_t k = 0; k < after.size(); ++k) {
      INFO(h.layer().type() << " add-mode gradient of input " << i << " element " << k);
      REQUIRE(after[k] == Approx(before[i][k] + written[i][k]).margin(1e-6));
    }
  }
}

}  // namespace lockstep::testing
