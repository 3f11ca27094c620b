#pragma once
// Flatten: [C, H, W] (or any per-sample shape) -> [C*H*W], in NCHW order.
// The graph's memory plan may make the output a view of the input and the
// input's written gradient the output gradient's buffer: then forward and
// backward copy nothing. Otherwise forward copies and backward copies (or
// adds) the gradient back. No parameters, nothing saved.
#include "layers/layer.h"

namespace lockstep {

class Flatten final : public Layer {
public:
  std::string type() const override { return "flatten"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  bool backward_reads_input(size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }
  bool output_may_alias_input() const override { return true; }
  bool input_grad_may_alias_output_grad() const override { return true; }
};

}  // namespace lockstep
