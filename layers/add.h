#pragma once
// Add: y = a + b for two inputs of one shape (the join of a residual block).
// Saves nothing, no parameters; backward hands dy to both inputs, writing or
// adding each per its grad mode (input 0 first, so both may be one buffer).
#include "layers/layer.h"

namespace lockstep {

class Add final : public Layer {
public:
  std::string type() const override { return "add"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  bool backward_reads_input(size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }
  bool input_grad_may_alias_output_grad(MemoryFormat) const override { return true; }
};

}  // namespace lockstep
