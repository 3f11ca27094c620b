#pragma once
// Graph: the Model made of layers. Nodes are kept in the order they were
// added, which must be topological (each input is "input" or an earlier
// node); the last node's output is the logits [N, classes]. A residual block
// is an `add` node with two inputs. The graph's outputs and gradients lie in
// one activation buffer, sized for the largest batch seen so far, at the
// offsets of its memory plan (layers/memory_plan.h): values whose lifetimes
// do not overlap share bytes, flatten's output and add's and flatten's
// written input gradients alias their sources. LOCKSTEP_MEMORY_PLAN=off (or
// set_memory_planning(false)) gives every output and gradient a buffer of
// its own instead, the layout before the plan, for comparison.
//
// Precision bf16 (ContextOptions::precision) is mixed precision as PyTorch
// AMP does it. On a GPU the input images (converted once per step), every
// node's output, every activation gradient and the logits' gradient are
// stored as DType::bf16 (the activation buffer is bf16; the plan sizes it in
// bytes); the CPU, whose ops refuse bf16 tensors, keeps FP32 storage and the
// graph rounds to bf16 exactly those values. Convolutions and linear layers
// multiply bf16 values (those activations and the bf16 copy of the weights
// and biases) and accumulate in FP32; batch-norm statistics, the loss and
// softmax are computed in FP32; weight and bias gradients are FP32 in the
// FP32 gradient arena, beside the FP32 master weights and momentum, those of
// convolution weights rounded once to bf16 on both devices
// (layers/conv2d.h). No loss scaling: bf16 has FP32's exponent range.
//
// Memory format nhwc (Context::memory_format(): given, or bf16 on a GPU): the graph converts the
// input images to NHWC once per step, into a buffer of its own, and every
// [N, C, H, W] output and gradient is laid out channels-last; the layers
// take either (flatten hands the linear layers NCHW order, layers/flatten.h;
// conv2d uses a KRSC copy of its filter on a GPU, layers/conv2d.h). Values
// of other ranks ([N, F]: flatten's output, the logits) have no format. The
// weights, their gradients, checkpoints and predictions are those of nchw.
// The format is read from the context at every forward; a change lays the
// activation buffer out again (flatten's aliasing depends on it).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "layers/layer.h"
#include "layers/memory_plan.h"

namespace lockstep {

class Graph final : public Model {
public:
  // `input_shape` is one sample's [C, H, W] (or [F]); `spec` names the model.
  Graph(Shape input_shape, int64_t num_classes, std::string spec);

  // Adds a node reading the named earlier nodes ("input" is the data). Returns
  // its name. Throws when a name is unknown or taken, or shapes do not fit.
  const std::string& add(const std::string& name, std::unique_ptr<Layer> layer, std::vector<std::string> inputs);
  // Adds a node reading the previous node (or the input for the first).
  const std::string& then(const std::string& name, std::unique_ptr<Layer> layer);
  const std::string& last() const;

  // Allocates the arenas on `device` and initialises the parameters from
  // `seed`. No node may be added afterwards.
  void finalize(Device device, uint64_t seed);

  Device device() const override { return device_; }
  std::string spec() const override { return spec_; }
  Shape input_shape() const override { return input_shape_; }
  int64_t num_classes() const override { return num_classes_; }
  ParameterArenas& arenas() override { return arenas_; }
  Tensor& state_arena() override { return state_; }
  std::vector<ParamEntry> state_entries() const override { return state_entries_; }
  std::vector<BatchNormState*> batch_norms() override;

  TrainStepResult train_step(Context& ctx, const StepInfo& step, const Tensor& images, const Tensor& labels,
                             float loss_scale, const GradReadyCallback& on_grad_ready = {}) override;
  StepMetrics evaluate(Context& ctx, const Tensor& images, const Tensor& labels) override;
  Tensor logits(Context& ctx, const Tensor& images) override;

  size_t node_count() const { return nodes_.size(); }
  Layer& layer(size_t i) { return *nodes_[i].layer; }
  // The graph as built, for code that inspects it (layers/step_cost.h): node
  // i's layer, name, per-sample output shape and inputs (node indices, -1 the data).
  const Layer& layer(size_t i) const { return *nodes_[i].layer; }
  const std::string& node_name(size_t i) const { return nodes_[i].name; }
  const Shape& node_output_shape(size_t i) const { return nodes_[i].out_shape; }
  const std::vector<int>& node_inputs(size_t i) const { return nodes_[i].inputs; }

  // Fine-tuning. The head is the last node with parameters (the classifier),
  // the backbone every node before it. head_param_offset: where the head's
  // parameters start in the arenas, the backbone's lying before them
  // (SgdConfig::backbone_elements); 0 for a graph without parameters.
  int64_t head_param_offset() const;
  // A frozen backbone runs as in inference (batch norm on its running
  // statistics, which stay as they are; no dropout), and backward stops at
  // the head, so the backbone's gradients stay zero; batch_norms() lists only
  // the layers from the head on. Weight decay still reaches the backbone
  // unless its learning rate is scaled to 0 as well (SgdConfig).
  void freeze_backbone(bool frozen) { frozen_ = frozen; }
  void set_label_smoothing(float e) override { label_smoothing_ = e; }

  // Per-node profiling (lockstep-bench profile): when set, the graph calls
  // the hook just before (done false) and just after (done true) each node's
  // forward and backward, with the node's index, so it can put time marks
  // (Context::mark_time) around them; unset, the default, nothing is called.
  enum class NodePass { forward, backward };
  using NodeHook = std::function<void(Context& ctx, size_t node, NodePass pass, bool done)>;
  void set_node_hook(NodeHook hook) { node_hook_ = std::move(hook); }

  // Memory planning on (the default, unless LOCKSTEP_MEMORY_PLAN=off) or
  // off; a change takes effect at the next step, which lays the buffer out again.
  void set_memory_planning(bool on);
  bool memory_planning() const { return planning_; }
  // The nodes as the memory plan sees them, and the plan at `batch` samples
  // (computed: nothing is allocated, the graph need not be finalised).
  // `format`: the activations' memory format (flatten of NHWC images is a
  // transpose, not an alias).
  // `dtype`: the activations' stored type (PrecisionPolicy::activations).
  std::vector<PlanNode> plan_nodes(MemoryFormat format = MemoryFormat::nchw, DType dtype = DType::f32) const;
  MemoryPlan memory_plan(int64_t batch, PlanKind kind, bool share, MemoryFormat format = MemoryFormat::nchw,
                         DType dtype = DType::f32) const;
  // Bytes of a training step's outputs and gradients at `batch`, stored as
  // `dtype`: planned, and with one output and one gradient buffer per node.
  int64_t activation_bytes(int64_t batch, DType dtype = DType::f32) const;
  int64_t unplanned_activation_bytes(int64_t batch, DType dtype = DType::f32) const;
  // The activation buffer allocated now (training's and evaluation's plans
  // share it), 0 before the first step.
  int64_t allocated_activation_bytes() const { return activations_.defined() ? activations_.bytes() : 0; }
  // The memory format the activation buffer is laid out in now (the last
  // step's Context::memory_format(); nchw before the first step).
  MemoryFormat activation_format() const { return format_; }
  // The activation buffer's stored type now (the last step's PrecisionPolicy::activations).
  DType activation_stored_type() const { return dtype_; }

private:
  struct Node {
    std::string name;
    std::unique_ptr<Layer> layer;
    std::vector<int> inputs;  // node indices; -1 is the graph input
    Shape out_shape;          // per sample
    int64_t first_param_offset = -1;
    size_t param_begin = 0, param_end = 0;  // the node's entries in the parameter arenas
    // [capacity, ...out_shape] views into activations_: the training plan's
    // output and gradient, and the evaluation plan's output.
    Tensor output, grad, eval_output;
  };

  // The head's node index (node_count() when no node has parameters).
  size_t head_index() const;
  // Whether node n runs as in inference in a training step: a frozen backbone's.
  bool frozen(size_t n) const { return frozen_ && n < head_index(); }
  // Lays the activation buffer out for `batch` samples in `format` unless it is already.
  void ensure_capacity(int64_t batch, MemoryFormat format, DType dtype);
  // A [batch, ...per_sample] view of activations_ at `byte_offset`, channels-last
  // when the graph's format is nhwc and the value is an image batch.
  Tensor activation_view(int64_t byte_offset, int64_t batch, const Shape& per_sample) const;
  // How input `i` of a node (-1: the data) lies in memory, for the plan.
  MemoryFormat input_layout(int input, MemoryFormat format) const;
  std::vector<Tensor> gather_inputs(const Node& node, const Tensor& images, int64_t batch, Mode mode) const;
  // Runs every node's forward; returns the images the nodes read (prepare_input's).
  Tensor forward_all(Context& ctx, const Tensor& images, Mode mode, const StepInfo& step);
  // The images the nodes read: `images`, or a copy of them in input_copy_:
  // converted to NHWC in that format, rounded to bf16 in precision bf16.
  Tensor prepare_input(Context& ctx, const Tensor& images);
  void prepare_bf16_weights(Context& ctx);
  void check_batch(const Tensor& images, const Tensor& labels) const;

  Shape input_shape_;
  int64_t num_classes_;
  std::string spec_;
  std::vector<Node> nodes_;
  bool finalized_ = false;
  Device device_;
  ParameterArenas arenas_;
  Tensor state_;
  std::vector<ParamEntry> state_entries_;
  int64_t capacity_ = 0;
  // The images as the nodes read them when that is not `images` itself
  // (memory format nhwc: converted; precision bf16: rounded to bf16 in f32
  // storage on the CPU, converted to bf16 on a GPU, with a staging half
  // before the transpose in nhwc), [capacity, ...input].
  Tensor input_copy_;
  MemoryFormat format_ = MemoryFormat::nchw;  // the activations' layout now
  DType dtype_ = DType::f32;                  // and their stored type
  bool planning_ = true;
  bool frozen_ = false;
  float label_smoothing_ = 0.0f;
  bool layout_stale_ = false;  // planning switched since the buffer was laid out
  Tensor activations_;
  NodeHook node_hook_;
};

}  // namespace lockstep
