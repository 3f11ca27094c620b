#include "layers/step_cost.h"

#include <algorithm>

#include "base/error.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "layers/pool.h"

namespace lockstep {

namespace {

double params_of(const Layer& layer, const std::vector<Shape>& inputs) {
  double n = 0;
  for (const ParamSpec& p : layer.parameter_specs(inputs)) n += static_cast<double>(p.shape.numel());
  return n;
}

}  // namespace

double StepCost::flops() const {
  double sum = 0;
  for (const LayerCost& l : layers) sum += l.flops();
  return sum;
}

double StepCost::bytes() const {
  double sum = 0;
  for (const LayerCost& l : layers) sum += l.bytes();
  return sum;
}

StepCost step_cost(const Graph& graph, const StepCostOptions& options) {
  LS_CHECK(options.batch > 0, "step cost: the batch must be positive, got ", options.batch);
  LS_CHECK(options.activation_bytes > 0 && options.weight_bytes > 0, "step cost: element sizes must be positive");
  const double n = static_cast<double>(options.batch);
  const double a = options.activation_bytes;
  StepCost cost;
  double master_params = 0;  // every parameter, for the update
  double copy_params = 0;    // the conv/linear ones, held in weight_bytes too
  for (size_t i = 0; i < graph.node_count(); ++i) {
    const Layer& layer = graph.layer(i);
    std::vector<Shape> in_shapes;
    bool grad_needed = false;  // some input is a node, so dx is computed
    double in = 0;             // input elements over the batch, all inputs
    for (int src : graph.node_inputs(i)) {
      in_shapes.push_back(src < 0 ? graph.input_shape() : graph.node_output_shape(static_cast<size_t>(src)));
      in += n * static_cast<double>(in_shapes.back().numel());
      grad_needed = grad_needed || src >= 0;
    }
    const double out = n * static_cast<double>(graph.node_output_shape(i).numel());
    const std::string type = layer.type();
    LayerCost c{graph.node_name(i), type};
    c.parameters = static_cast<int64_t>(params_of(layer, in_shapes));
    const double p = static_cast<double>(c.parameters);
    master_params += p;
    const double dx_bytes = grad_needed ? in * a : 0.0;

    if (type == "conv2d" || type == "linear") {
      const auto* conv = dynamic_cast<const Conv2d*>(&layer);
      const auto* weighted = dynamic_cast<const WeightedLayer*>(&layer);
      // Multiply-adds of one pass: every output element takes the product of
      // the weight row it uses with the inputs under it.
      const double inputs_per_output =
          conv ? static_cast<double>(in_shapes[0][0]) * conv->kernel() * conv->kernel()
               : static_cast<double>(in_shapes[0].numel());
      const double macs = out * inputs_per_output;
      const double bias = weighted->has_bias() ? out : 0.0;
      const double w = options.weight_bytes;
      c.matrix = true;
      c.forward_flops = 2 * macs + bias;
      c.backward_data_flops = grad_needed ? 2 * macs : 0.0;
      c.backward_weight_flops = 2 * macs + bias;
      c.forward_bytes = in * a + p * w + out * a;
      // dy and x (for dW) read, dW written; W read and dx written when dx is needed.
      c.backward_bytes = out * a + in * a + p * w + (grad_needed ? p * w + dx_bytes : 0.0);
      copy_params += p;
    } else if (type == "batchnorm2d") {
      // Forward: one pass of sums (x, x^2: 3 per element) and one of
      // (x - mean) * scale + shift (2). Backward: sums of dy and dy*xhat (3),
      // xhat again (2), dx = a*dy + b*xhat + c (4).
      // x has the output's shape; `in` also counts the shortcut of a fused join.
      const double x = out;
      c.forward_flops = 5 * x;
      c.backward_data_flops = 9 * x;
      c.forward_bytes = in * a + p * 4 + out * a;
      c.backward_bytes = out * a + x * a + p * 4 + p * 4 + dx_bytes;
      const auto& bn = dynamic_cast<const BatchNorm2d&>(layer);
      if (bn.fused_relu()) {
        // The ReLU in the same passes: its max and mask cost a flop each way
        // and backward reads y (the mask) besides x and dy.
        c.forward_flops += x;
        c.backward_data_flops += x;
        c.backward_bytes += out * a;
      }
      // The residual add joined in too: a flop per value forward, the
      // shortcut read there (in `in`) and its gradient written in backward
      // (in dx_bytes), the masked dy itself, so the add's output, the ReLU's
      // pass and the shortcut's copy are gone.
      if (bn.fused_add()) c.forward_flops += x;
    } else if (type == "relu") {
      c.forward_flops = in;
      c.backward_data_flops = in;
      c.forward_bytes = in * a + out * a;
      c.backward_bytes = 2 * out * a + dx_bytes;  // dy and y (the mask)
    } else if (type == "add") {
      c.forward_flops = out;
      c.forward_bytes = in * a + out * a;  // both inputs read
      // Backward hands dy on to both inputs: an alias, no work.
    } else if (type == "flatten") {
      // A view of its input: no work either way.
    } else if (type == "dropout") {
      // The mask is redrawn from a counter-based hash (integer work, not counted): one multiply each way.
      c.forward_flops = in;
      c.backward_data_flops = in;
      c.forward_bytes = in * a + out * a;
      c.backward_bytes = out * a + dx_bytes;
    } else if (type == "maxpool2d" || type == "avgpool2d") {
      // One compare (or add) per window element, in forward and again in
      // backward (max finds the arg-max anew from x; average spreads dy).
      const int k = dynamic_cast<const WindowPool&>(layer).window().kernel;
      const double window = static_cast<double>(k) * k;
      c.forward_flops = out * window;
      c.backward_data_flops = out * window;
      c.forward_bytes = in * a + out * a;
      c.backward_bytes = out * a + (type == "maxpool2d" ? in * a : 0.0) + dx_bytes;
    } else if (type == "adaptive_avgpool2d") {
      // Every input value lands in at least one window and every output has
      // one: about max(in, out) adds each way (windows overlap by at most a row).
      c.forward_flops = std::max(in, out);
      c.backward_data_flops = std::max(in, out);
      c.forward_bytes = in * a + out * a;
      c.backward_bytes = out * a + dx_bytes;
    } else if (type == "global_avgpool") {
      c.forward_flops = in;
      c.backward_data_flops = in;
      c.forward_bytes = in * a + out * a;
      c.backward_bytes = out * a + dx_bytes;
    } else {
      LS_FAIL("step cost: no count for layer '", graph.node_name(i), "' of type ", type);
    }
    cost.layers.push_back(std::move(c));
  }

  // Softmax cross-entropy over the logits: max, subtract, exp and sum
  // forward (4 per logit), softmax minus one-hot backward (2); logits read,
  // their gradient written, a 4-byte label per sample read.
  const double logits = n * static_cast<double>(graph.num_classes());
  LayerCost loss{"loss", "softmax_cross_entropy"};
  loss.forward_flops = 4 * logits;
  loss.backward_data_flops = 2 * logits;
  loss.forward_bytes = logits * a + n * 4;
  loss.backward_bytes = logits * a;
  cost.layers.push_back(loss);

  // SGD with momentum and weight decay: g + wd*w, m = mu*m + g, w -= lr*m
  // (6 per parameter); fp32 master weight and momentum read and written,
  // the gradient read (in weight_bytes for conv/linear, 4 for the rest), and
  // the compute copy written when it is a separate one.
  const double w = options.weight_bytes;
  LayerCost sgd{"sgd update", "sgd"};
  sgd.parameters = static_cast<int64_t>(master_params);
  sgd.forward_flops = 6 * master_params;
  sgd.forward_bytes = master_params * 16 + copy_params * w + (master_params - copy_params) * 4 +
                      (options.weight_copy ? copy_params * w : 0.0);
  cost.layers.push_back(sgd);
  return cost;
}

}  // namespace lockstep
