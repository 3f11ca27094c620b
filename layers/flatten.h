#pragma once
// Flatten: [C, H, W] (or any per-sample shape) -> [C*H*W], in NCHW order.
// The graph gives every node its own buffer, so forward copies and backward
// copies (or adds) the gradient back. No parameters, nothing saved.
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
};

}  // namespace lockstep
