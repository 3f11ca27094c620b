#include "layers/add.h"

#include "base/error.h"
#include "ops/tensor_ops.h"

namespace lockstep {

Shape Add::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 2, describe(*this, inputs), "takes two inputs, got ", inputs.size());
  LS_CHECK(inputs[0] == inputs[1], describe(*this, inputs), "the two inputs must have the same shape");
  return inputs[0];
}

void Add::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode, const StepInfo&) {
  ops::add(ctx, inputs[0], inputs[1], output);
}

void Add::backward(Context& ctx, const std::vector<Tensor>&, const Tensor&, const Tensor& output_grad,
                   std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  for (size_t i = 0; i < 2; ++i) {
    const bool add = grad_modes[i] == GradMode::add;
    // A written gradient the memory plan put in output_grad's buffer is already there.
    if (!input_grads[i].defined() || (!add && same_buffer(input_grads[i], output_grad))) continue;
    ops::copy_or_add(ctx, output_grad, input_grads[i], add);
  }
}

}  // namespace lockstep
