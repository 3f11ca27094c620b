#pragma once
// The Layer interface. A layer computes one output from its inputs, holds
// views of its parameters (into the replica's arenas) and, for batch norm, its
// running statistics. Backward is written by hand for each layer.
//
// Contract for every layer:
//  - output_shape() validates the per-sample input shapes ([C,H,W] or [F])
//    and throws lockstep::Error naming the layer and the shapes when they do
//    not fit; forward/backward may then assume them.
//  - forward() writes the whole output; the batch size is that of inputs[0].
//  - backward() writes every parameter gradient (never accumulates: each
//    parameter is used once per step) and, for each defined input_grads[i],
//    writes (grad_modes[i] == write) or adds to (== add) dL/d(input i). An
//    undefined input_grads[i] means that gradient is not needed.
#include <memory>
#include <string>
#include <vector>

#include "runtime/arena.h"
#include "runtime/context.h"
#include "runtime/model.h"
#include "runtime/step.h"
#include "runtime/tensor.h"

namespace lockstep {

enum class Mode { train, eval };
enum class GradMode { write, add };

class Layer {
public:
  virtual ~Layer() = default;
  virtual std::string type() const = 0;
  // Per-sample shapes in, per-sample shape out.
  virtual Shape output_shape(const std::vector<Shape>& inputs) const = 0;
  // Parameters and running statistics this layer needs, given its input shapes
  // (names are local; the graph prefixes the node name).
  virtual std::vector<ParamSpec> parameter_specs(const std::vector<Shape>& /*inputs*/) const { return {}; }
  virtual std::vector<ParamSpec> state_specs(const std::vector<Shape>& /*inputs*/) const { return {}; }
  // Views into the arenas, in the order of the specs above.
  virtual void bind(const std::vector<Tensor>& /*params*/, const std::vector<Tensor>& /*grads*/,
                    const std::vector<Tensor>& /*state*/) {}
  // Precision bf16: views of the bf16 copy of the parameters
  // (ParameterArenas::params_bf16), in the same order; the layers that
  // multiply by their weights (conv2d, linear) read it instead of the FP32
  // master weights.
  virtual void bind_bf16(const std::vector<Tensor>& /*params_bf16*/) {}

  // `step` says which training step a Mode::train forward belongs to ({} in
  // evaluation); only layers that draw random numbers read it.
  virtual void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
                       const StepInfo& step) = 0;
  virtual void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output,
                        const Tensor& output_grad, std::vector<Tensor>& input_grads,
                        const std::vector<GradMode>& grad_modes) = 0;

  // Batch-norm layers expose their statistics to the replica manager.
  virtual BatchNormState* batch_norm_state() { return nullptr; }

  // What backward reads besides output_grad, for the graph's memory plan
  // (layers/memory_plan.h): a value no later pass reads may have its bytes
  // given to another value once the forward is done with it. The default,
  // everything, is always safe; a layer that says false must not read that
  // tensor's contents in backward (it still gets a view of the right shape).
  virtual bool backward_reads_input(size_t /*i*/) const { return true; }
  virtual bool backward_reads_output() const { return true; }
  // `layout` is how the input's elements lie in memory in this graph: nhwc
  // only for an image batch kept channels-last whose pixels are more than
  // one (a [C, 1, 1] sample lies alike in both formats).
  // The output equals inputs[0] in memory, element for element (flatten of
  // NCHW): the plan may make the output a view of the input's buffer, and
  // forward, seeing both at one address (same_buffer), then copies nothing.
  virtual bool output_may_alias_input(MemoryFormat /*layout*/) const { return false; }
  // Every input's gradient equals output_grad in memory (add, flatten of
  // NCHW): the plan may give an input gradient that backward writes
  // (GradMode::write, never add) the output gradient's buffer, and backward
  // then skips that copy.
  virtual bool input_grad_may_alias_output_grad(MemoryFormat /*layout*/) const { return false; }

  std::string name;  // set by the graph; used in error messages
};

// "conv2d 'stem' (input [3, 5, 5]): " — the prefix of a layer's error messages.
std::string describe(const Layer& layer, const std::vector<Shape>& inputs);

// True when a and b are the same elements of the same memory (an aliased
// output or gradient the memory plan gave its source's buffer).
bool same_buffer(const Tensor& a, const Tensor& b);

}  // namespace lockstep
