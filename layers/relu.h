#pragma once
// ReLU: y = max(x, 0). Saves nothing beyond its output, from which backward
// reads the mask. No parameters.
#include "layers/layer.h"

namespace lockstep {

class ReLU final : public Layer {
public:
  std::string type() const override { return "relu"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  // Backward masks by the output, never the input.
  bool backward_reads_input(size_t) const override { return false; }
};

}  // namespace lockstep
