#pragma once
// Graph: the Model made of layers. Nodes are kept in the order they were
// added, which must be topological (each input is "input" or an earlier
// node); the last node's output is the logits [N, classes]. A residual block
// is an `add` node with two inputs. The graph owns one output buffer and one
// gradient buffer per node, sized for the largest batch seen so far.
//
// Precision bf16 (ContextOptions::precision, the CPU backend) is mixed
// precision as PyTorch AMP does it: the graph rounds to bf16 what a GPU
// would store in bf16 (the input images, every node's output, every
// activation gradient, the logits' gradient), keeping the values in FP32
// storage; convolutions and linear layers multiply bf16 values (those
// activations and the bf16 copy of the weights) and accumulate in FP32;
// batch-norm statistics, the loss and softmax are computed in FP32; weight
// and bias gradients are FP32 sums written unrounded to the FP32 gradient
// arena, beside the FP32 master weights and momentum. No loss scaling: bf16
// has FP32's exponent range.
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "layers/layer.h"

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

private:
  struct Node {
    std::string name;
    std::unique_ptr<Layer> layer;
    std::vector<int> inputs;  // node indices; -1 is the graph input
    Shape out_shape;          // per sample
    int64_t first_param_offset = -1;
    size_t param_begin = 0, param_end = 0;  // the node's entries in the parameter arenas
    Tensor output, grad;      // [capacity, ...out_shape]
  };

  const Node& checked_input_node(int index) const;
  void ensure_capacity(int64_t batch);
  std::vector<Tensor> gather_inputs(const Node& node, const Tensor& images, int64_t batch) const;
  // Returns the images the nodes read: `images`, or in precision bf16 a copy
  // rounded to bf16.
  Tensor forward_all(Context& ctx, const Tensor& images, Mode mode, const StepInfo& step);
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
  Tensor input_bf16_;  // precision bf16: the images rounded to bf16, [capacity, ...input]
};

}  // namespace lockstep
