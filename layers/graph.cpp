#include "layers/graph.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "ops/bf16.h"
#include "ops/loss.h"
#include "ops/memory_format.h"
#include "base/environment.h"

namespace lockstep {

namespace {
Shape batched(int64_t n, const Shape& per_sample) {
  Shape s;
  switch (per_sample.rank()) {
    case 1: s = Shape{n, per_sample[0]}; break;
    case 2: s = Shape{n, per_sample[0], per_sample[1]}; break;
    default: s = Shape{n, per_sample[0], per_sample[1], per_sample[2]}; break;
  }
  return s;
}

// LOCKSTEP_MEMORY_PLAN: unset or "on" plans, "off" gives each value its own buffer.
bool planning_from_environment() {
  const std::optional<std::string> v = environment_value(EnvironmentVariable::memory_plan);
  if (!v || *v == "on") return true;
  LS_CHECK(*v == "off", "LOCKSTEP_MEMORY_PLAN='", *v, "': expected on or off");
  return false;
}
}  // namespace

Graph::Graph(Shape input_shape, int64_t num_classes, std::string spec)
    : input_shape_(input_shape), num_classes_(num_classes), spec_(std::move(spec)),
      planning_(planning_from_environment()) {
  LS_CHECK(input_shape.rank() >= 1 && input_shape.rank() <= 3 && input_shape.numel() > 0,
           "model input shape must be [C, H, W] or [F] with no zero extent, got ", input_shape.str());
  LS_CHECK(num_classes >= 2, "a classifier needs at least 2 classes, got ", num_classes);
}

const std::string& Graph::add(const std::string& name, std::unique_ptr<Layer> layer,
                              std::vector<std::string> inputs) {
  LS_CHECK(!finalized_, "node '", name, "' added after the graph was finalised");
  LS_CHECK(!name.empty() && name != "input", "invalid node name '", name, "'");
  LS_CHECK(layer != nullptr, "node '", name, "' has no layer");
  Node node;
  node.name = name;
  std::vector<Shape> in_shapes;
  for (const std::string& in : inputs) {
    if (in == "input") {
      node.inputs.push_back(-1);
      in_shapes.push_back(input_shape_);
      continue;
    }
    auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const Node& n) { return n.name == in; });
    LS_CHECK(it != nodes_.end(), "node '", name, "' reads '", in, "', which is not an earlier node");
    node.inputs.push_back(static_cast<int>(it - nodes_.begin()));
    in_shapes.push_back(it->out_shape);
  }
  for (const Node& n : nodes_) LS_CHECK(n.name != name, "node name '", name, "' used twice");
  layer->name = name;
  node.out_shape = layer->output_shape(in_shapes);
  node.layer = std::move(layer);
  nodes_.push_back(std::move(node));
  return nodes_.back().name;
}

const std::string& Graph::then(const std::string& name, std::unique_ptr<Layer> layer) {
  return add(name, std::move(layer), {nodes_.empty() ? std::string("input") : nodes_.back().name});
}

const std::string& Graph::last() const {
  LS_CHECK(!nodes_.empty(), "the graph has no node");
  return nodes_.back().name;
}

void Graph::finalize(Device device, uint64_t seed) {
  LS_CHECK(!finalized_, "graph finalised twice");
  LS_CHECK(!nodes_.empty(), "the graph has no node");
  const Shape& out = nodes_.back().out_shape;
  LS_CHECK(out.rank() == 1 && out[0] == num_classes_, "the last node '", nodes_.back().name, "' gives ", out.str(),
           " per sample, expected [", num_classes_, "] logits");
  device_ = device;

  std::vector<ParamSpec> params, states;
  std::vector<std::pair<size_t, size_t>> param_range, state_range;  // per node: [first, end) spec index
  for (Node& node : nodes_) {
    std::vector<Shape> in_shapes;
    for (int i : node.inputs) in_shapes.push_back(i < 0 ? input_shape_ : nodes_[i].out_shape);
    auto p = node.layer->parameter_specs(in_shapes);
    auto s = node.layer->state_specs(in_shapes);
    param_range.emplace_back(params.size(), params.size() + p.size());
    state_range.emplace_back(states.size(), states.size() + s.size());
    for (auto& spec : p) params.push_back({node.name + "." + spec.name, spec.shape, spec.init, spec.decay, spec.fan_in});
    for (auto& spec : s) states.push_back({node.name + "." + spec.name, spec.shape, spec.init, spec.decay, spec.fan_in});
  }
  arenas_ = ParameterArenas(params, device, /*with_momentum=*/true);
  initialize_parameters(arenas_, seed);

  // Running statistics: their own arena, initialised by their Init (zeros/ones).
  ParameterArenas state_layout(states, device, /*with_momentum=*/false);
  initialize_parameters(state_layout, 0);
  state_ = state_layout.params;
  state_entries_ = state_layout.entries();

  for (size_t n = 0; n < nodes_.size(); ++n) {
    std::vector<Tensor> p, g, s;
    for (size_t i = param_range[n].first; i < param_range[n].second; ++i) {
      p.push_back(arenas_.param(i));
      g.push_back(arenas_.grad(i));
    }
    for (size_t i = state_range[n].first; i < state_range[n].second; ++i)
      s.push_back(state_.view(state_entries_[i].offset, state_entries_[i].shape));
    if (param_range[n].first < param_range[n].second)
      nodes_[n].first_param_offset = arenas_.entries()[param_range[n].first].offset;
    nodes_[n].param_begin = param_range[n].first;
    nodes_[n].param_end = param_range[n].second;
    nodes_[n].layer->bind(p, g, s);
  }
  finalized_ = true;
}

std::vector<BatchNormState*> Graph::batch_norms() {
  std::vector<BatchNormState*> out;
  for (size_t n = 0; n < nodes_.size(); ++n)
    if (BatchNormState* s = nodes_[n].layer->batch_norm_state(); s && !frozen(n)) out.push_back(s);
  return out;
}

size_t Graph::head_index() const {
  for (size_t n = nodes_.size(); n-- > 0;)
    if (nodes_[n].param_end > nodes_[n].param_begin) return n;
  return nodes_.size();
}

int64_t Graph::head_param_offset() const {
  LS_CHECK(finalized_, "head_param_offset before finalize()");
  const size_t head = head_index();
  return head < nodes_.size() ? nodes_[head].first_param_offset : 0;
}

void Graph::set_memory_planning(bool on) {
  if (on == planning_) return;
  planning_ = on;
  layout_stale_ = true;  // the next step lays the buffer out again
}

MemoryFormat Graph::input_layout(int input, MemoryFormat format) const {
  const Shape& s = input < 0 ? input_shape_ : nodes_[input].out_shape;
  // A [C, 1, 1] sample lies alike in both formats.
  return format == MemoryFormat::nhwc && s.rank() == 3 && s[1] * s[2] > 1 ? MemoryFormat::nhwc : MemoryFormat::nchw;
}

std::vector<PlanNode> Graph::plan_nodes(MemoryFormat format, DType dtype) const {
  std::vector<PlanNode> out;
  for (const Node& node : nodes_) {
    PlanNode p;
    p.inputs = node.inputs;
    p.bytes_per_sample = node.out_shape.numel() * static_cast<int64_t>(dtype_size(dtype));
    for (size_t i = 0; i < node.inputs.size(); ++i) p.backward_reads_input.push_back(node.layer->backward_reads_input(i));
    p.backward_reads_output = node.layer->backward_reads_output();
    const MemoryFormat layout = input_layout(node.inputs.empty() ? -1 : node.inputs[0], format);
    p.output_may_alias_input = node.layer->output_may_alias_input(layout);
    p.input_grad_may_alias_output_grad = node.layer->input_grad_may_alias_output_grad(layout);
    out.push_back(std::move(p));
  }
  return out;
}

MemoryPlan Graph::memory_plan(int64_t batch, PlanKind kind, bool share, MemoryFormat format, DType dtype) const {
  return plan_memory(plan_nodes(format, dtype), batch, kind, share);
}

int64_t Graph::activation_bytes(int64_t batch, DType dtype) const {
  return memory_plan(batch, PlanKind::train, true, MemoryFormat::nchw, dtype).bytes();
}

int64_t Graph::unplanned_activation_bytes(int64_t batch, DType dtype) const {
  return memory_plan(batch, PlanKind::train, false, MemoryFormat::nchw, dtype).bytes();
}

Tensor Graph::activation_view(int64_t byte_offset, int64_t batch, const Shape& per_sample) const {
  // The plan's offsets are multiples of 256 bytes, so of either element size.
  const int64_t offset = byte_offset / static_cast<int64_t>(dtype_size(dtype_));
  Tensor t = activations_.view(offset, batched(batch, per_sample));
  return per_sample.rank() == 3 ? t.with_format(format_) : t;
}

void Graph::ensure_capacity(int64_t batch, MemoryFormat format, DType dtype) {
  if (batch <= capacity_ && !layout_stale_ && format == format_ && dtype == dtype_) return;
  // Free the old buffer first (peak memory); if an allocation below fails,
  // capacity 0 makes the next call allocate again instead of using a hole.
  batch = std::max(batch, capacity_);
  capacity_ = 0;
  for (Node& node : nodes_) node.output = node.grad = node.eval_output = Tensor();
  activations_ = Tensor();
  format_ = format;
  dtype_ = dtype;
  // One buffer for both plans: training recomputes every value each step, so
  // an evaluation between steps may overwrite any of them. The offsets depend
  // only on the nodes and the capacity, so a captured step (runtime/step_graph.h)
  // finds its values where it left them as long as the capacity holds.
  const std::vector<PlanNode> plan_in = plan_nodes(format, dtype);
  const MemoryPlan train = plan_memory(plan_in, batch, PlanKind::train, planning_);
  const MemoryPlan eval = plan_memory(plan_in, batch, PlanKind::eval, planning_);
  const int64_t bytes = std::max(train.total_bytes, eval.total_bytes);
  activations_ = Tensor::empty(Shape{bytes / static_cast<int64_t>(dtype_size(dtype))}, device_, dtype);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Shape& shape = nodes_[n].out_shape;
    nodes_[n].output = activation_view(train.output_offset[n], batch, shape);
    nodes_[n].grad = activation_view(train.grad_offset[n], batch, shape);
    nodes_[n].eval_output = activation_view(eval.output_offset[n], batch, shape);
  }
  capacity_ = batch;
  layout_stale_ = false;
}

std::vector<Tensor> Graph::gather_inputs(const Node& node, const Tensor& images, int64_t batch, Mode mode) const {
  std::vector<Tensor> inputs;
  for (int i : node.inputs) {
    if (i < 0) {
      inputs.push_back(images);
      continue;
    }
    const Node& src = nodes_[i];
    inputs.push_back((mode == Mode::eval ? src.eval_output : src.output).batch_slice(0, batch));
  }
  return inputs;
}

void Graph::check_batch(const Tensor& images, const Tensor& labels) const {
  LS_CHECK(finalized_, "the graph is used before finalize()");
  LS_CHECK(images.device() == device_ && labels.device() == device_, "batch on ", images.device().str(), "/",
           labels.device().str(), " for a model on ", device_.str());
  Shape expect = batched(images.shape().rank() ? images.dim(0) : 0, input_shape_);
  LS_CHECK(images.shape() == expect, "images of shape ", images.shape().str(), " for a model that takes ",
           expect.str());
  // Labels: [N], or [N, 3] mixed targets (ops/loss.h), which only training takes.
  LS_CHECK(labels.shape().rank() >= 1 && labels.dim(0) == images.dim(0), images.dim(0), " images with labels ",
           labels.shape().str());
}

// The bf16 copy of the weights: made (and bound to the layers) at the first
// bf16 forward, made again from the FP32 master weights when something other
// than sgd_step wrote them (ParameterArenas::params_bf16_stale).
void Graph::prepare_bf16_weights(Context& ctx) {
  if (!arenas_.params_bf16.defined()) {
    arenas_.params_bf16 = Tensor::zeros(Shape{arenas_.total()}, device_, DType::bf16);
    arenas_.params_bf16_stale = true;
    for (Node& node : nodes_) {
      std::vector<Tensor> views;
      for (size_t i = node.param_begin; i < node.param_end; ++i) {
        const ParamEntry& e = arenas_.entries()[i];
        views.push_back(arenas_.params_bf16.view(e.offset, e.shape));
      }
      if (!views.empty()) node.layer->bind_bf16(views);
    }
  }
  if (arenas_.params_bf16_stale) {
    ops::convert(ctx, arenas_.params, arenas_.params_bf16);
    arenas_.params_bf16_stale = false;
  }
}

Tensor Graph::prepare_input(Context& ctx, const Tensor& images) {
  const bool bf16 = ctx.precision_policy().bf16;
  // NHWC images: converted once here, every node then keeps the format.
  const bool nhwc = format_ == MemoryFormat::nhwc && input_shape_.rank() == 3;
  if (!bf16 && !nhwc) return images;
  const int64_t values = capacity_ * input_shape_.numel();
  if (dtype_ == DType::bf16) {
    // Stored in bf16 (a GPU): converted (rounded) once; in NHWC into a
    // staging half first, then transposed (the conversion is element-wise,
    // the transpose keeps the dtype).
    const int64_t need = nhwc ? 2 * values : values;
    if (!input_copy_.defined() || input_copy_.dtype() != DType::bf16 || input_copy_.numel() < need)
      input_copy_ = Tensor::empty(Shape{need}, device_, DType::bf16);
    Tensor staged = input_copy_.view(0, images.shape());
    ops::convert(ctx, images, staged);  // AMP casts the input of the first convolution to bf16
    if (!nhwc) return staged;
    Tensor x = input_copy_.view(values, images.shape()).with_format(MemoryFormat::nhwc);
    ops::convert_format(ctx, staged, x);
    return x;
  }
  if (!input_copy_.defined() || input_copy_.dtype() != DType::f32 || input_copy_.numel() < values)
    input_copy_ = Tensor::empty(Shape{values}, device_);
  Tensor x = input_copy_.view(0, images.shape());
  if (nhwc) {
    x = x.with_format(MemoryFormat::nhwc);
    ops::convert_format(ctx, images, x);
  } else {
    ctx.copy(images, x);
  }
  if (bf16) ops::round_to_bf16(ctx, x);  // AMP casts the input of the first convolution to bf16
  return x;
}

Tensor Graph::forward_all(Context& ctx, const Tensor& images, Mode mode, const StepInfo& step) {
  int64_t batch = images.dim(0);
  ensure_capacity(batch, ctx.memory_format(), ctx.precision_policy().activations);
  if (ctx.precision_policy().bf16) prepare_bf16_weights(ctx);
  const bool round = ctx.precision_policy().rounds_in_f32;  // the CPU: each stored value rounded
  const Tensor x = prepare_input(ctx, images);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    Node& node = nodes_[n];
    std::vector<Tensor> inputs = gather_inputs(node, x, batch, mode);
    Tensor out = (mode == Mode::eval ? node.eval_output : node.output).batch_slice(0, batch);
    if (node_hook_) node_hook_(ctx, n, NodePass::forward, false);
    // A frozen node of a training step: the training plan's buffers, inference's arithmetic.
    node.layer->forward(ctx, inputs, out, frozen(n) ? Mode::eval : mode, step);
    if (round) ops::round_to_bf16(ctx, out);  // where a GPU stores the activation in bf16
    if (node_hook_) node_hook_(ctx, n, NodePass::forward, true);
  }
  return x;
}

TrainStepResult Graph::train_step(Context& ctx, const StepInfo& step, const Tensor& images, const Tensor& labels,
                                  float loss_scale, const GradReadyCallback& on_grad_ready) {
  check_batch(images, labels);
  int64_t batch = images.dim(0);
  if (batch == 0) {
    // An empty slice still takes part: zero gradients and zero-weight statistics.
    ctx.zero(arenas_.grads);
    for (BatchNormState* bn : batch_norms()) {
      ctx.zero(bn->batch_mean);
      ctx.zero(bn->batch_var);
      bn->values_per_channel = 0;
    }
    if (on_grad_ready) on_grad_ready(0);
    return {};
  }
  TrainStepResult result;
  result.forward_mark = ctx.mark_time();
  const Tensor x = forward_all(ctx, images, Mode::train, step);
  result.backward_mark = ctx.mark_time();
  const bool round = ctx.precision_policy().rounds_in_f32;  // the CPU: each stored value rounded

  // The loss stays on the device until the step's end: nothing here waits for it.
  // In bf16 the softmax and loss are FP32 (on bf16 logits); their gradient is stored in bf16.
  Tensor logits = nodes_.back().output.batch_slice(0, batch);
  Tensor logits_grad = nodes_.back().grad.batch_slice(0, batch);
  result.read_back =
      ops::softmax_cross_entropy_queued(ctx, logits, labels, loss_scale, &logits_grad, label_smoothing_);
  if (round) ops::round_to_bf16(ctx, logits_grad);

  // Reverse order: a node's gradient is complete once every consumer (all
  // later nodes) has run; the first consumer to run writes it, the rest add.
  // A frozen backbone: backward ends at the head, which needs no input gradient.
  std::vector<bool> grad_written(nodes_.size(), false);
  grad_written.back() = true;
  const size_t first_trained = frozen_ ? std::min(head_index(), nodes_.size() - 1) : 0;
  for (size_t n = nodes_.size(); n-- > first_trained;) {
    Node& node = nodes_[n];
    std::vector<Tensor> inputs = gather_inputs(node, x, batch, Mode::train);
    std::vector<Tensor> input_grads(node.inputs.size());
    std::vector<GradMode> modes(node.inputs.size(), GradMode::write);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      int src = node.inputs[i];
      if (src < 0 || frozen(static_cast<size_t>(src))) continue;  // no gradient for the data or a frozen node
      input_grads[i] = nodes_[src].grad.batch_slice(0, batch);
      // The same source twice in one node: the layer writes the first, adds the second.
      bool seen_here = std::find(node.inputs.begin(), node.inputs.begin() + i, src) != node.inputs.begin() + i;
      modes[i] = grad_written[src] || seen_here ? GradMode::add : GradMode::write;
    }
    for (int src : node.inputs)
      if (src >= 0) grad_written[src] = true;
    Tensor out = node.output.batch_slice(0, batch);
    Tensor out_grad = node.grad.batch_slice(0, batch);
    if (node_hook_) node_hook_(ctx, n, NodePass::backward, false);
    node.layer->backward(ctx, inputs, out, out_grad, input_grads, modes);
    if (round)  // a GPU stores activation gradients in bf16 (added ones too: read, added in FP32, stored)
      for (Tensor& g : input_grads)
        if (g.defined()) ops::round_to_bf16(ctx, g);
    if (node_hook_) node_hook_(ctx, n, NodePass::backward, true);
    if (on_grad_ready && node.first_param_offset >= 0) on_grad_ready(node.first_param_offset);
  }
  if (on_grad_ready) on_grad_ready(0);
  result.end_mark = ctx.mark_time();
  return result;
}

StepMetrics Graph::evaluate(Context& ctx, const Tensor& images, const Tensor& labels) {
  check_batch(images, labels);
  if (images.dim(0) == 0) return {};
  forward_all(ctx, images, Mode::eval, {});
  Tensor logits = nodes_.back().eval_output.batch_slice(0, images.dim(0));
  return ops::softmax_cross_entropy(ctx, logits, labels, 1.0f, nullptr);
}

Tensor Graph::logits(Context& ctx, const Tensor& images) {
  LS_CHECK(finalized_, "the graph is used before finalize()");
  Tensor out = Tensor::empty(Shape{images.dim(0), num_classes_}, device_);
  if (images.dim(0) == 0) return out;
  forward_all(ctx, images, Mode::eval, {});
  const Tensor logits = nodes_.back().eval_output.batch_slice(0, images.dim(0));
  if (logits.dtype() == DType::f32) ctx.copy(logits, out);
  else ops::convert(ctx, logits, out);  // bf16 logits, widened exactly
  return out;
}

}  // namespace lockstep
