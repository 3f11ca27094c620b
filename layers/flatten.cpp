#include "layers/flatten.h"

#include "base/error.h"
#include "ops/tensor_ops.h"

namespace lockstep {

Shape Flatten::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 1, describe(*this, inputs), "takes one input, got ", inputs.size());
  LS_CHECK(inputs[0].rank() >= 1 && inputs[0].rank() <= 3 && inputs[0].numel() > 0, describe(*this, inputs),
           "the input must be [C, H, W], [H, W] or [F] with no zero extent");
  return Shape{inputs[0].numel()};
}

void Flatten::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode, const StepInfo&) {
  if (!same_buffer(inputs[0], output)) ops::copy_or_add(ctx, inputs[0], output, false);
}

void Flatten::backward(Context& ctx, const std::vector<Tensor>&, const Tensor&, const Tensor& output_grad,
                       std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  const bool add = grad_modes[0] == GradMode::add;
  if (input_grads[0].defined() && (add || !same_buffer(input_grads[0], output_grad)))
    ops::copy_or_add(ctx, output_grad, input_grads[0], add);
}

}  // namespace lockstep
