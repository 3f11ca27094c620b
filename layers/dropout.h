#pragma once
// Dropout: in training keeps each element with probability 1 - p and scales
// it by 1/(1 - p); in evaluation y = x. Stores no mask: backward redraws it
// from (ctx.seed, ctx.step, a hash of the layer's name, global element index),
// so forward and backward must see the same context values. No parameters;
// backward writes or adds the input gradient per its grad mode.
#include "layers/layer.h"

namespace lockstep {

class Dropout final : public Layer {
public:
  // 0 <= p < 1, else throws.
  explicit Dropout(float p);
  std::string type() const override { return "dropout"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  float p() const { return p_; }

private:
  uint64_t salt() const;

  float p_;
  // Backward follows the mode of the last forward: after an eval forward it is the identity too.
  Mode last_mode_ = Mode::train;
};

}  // namespace lockstep
