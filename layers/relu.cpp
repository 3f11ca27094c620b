#include "layers/relu.h"

#include "base/error.h"
#include "ops/elementwise.h"

namespace lockstep {

Shape ReLU::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 1, describe(*this, inputs), "takes one input");
  return inputs[0];
}

void ReLU::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode, const StepInfo&) {
  ops::relu_forward(ctx, inputs[0], output);
}

void ReLU::backward(Context& ctx, const std::vector<Tensor>&, const Tensor& output, const Tensor& output_grad,
                    std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  if (input_grads[0].defined())
    ops::relu_backward(ctx, output, output_grad, input_grads[0], grad_modes[0] == GradMode::add);
}

}  // namespace lockstep
