#include "layers/linear.h"

#include "base/error.h"
#include "ops/linear.h"

namespace lockstep {

Linear::Linear(int64_t out_features, bool bias, Init weight_init)
    : WeightedLayer(bias), out_features_(out_features), weight_init_(weight_init) {}

Shape Linear::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 1, describe(*this, inputs), "takes one input");
  LS_CHECK(inputs[0].rank() == 1, describe(*this, inputs),
           "takes a flat [F] input per sample; put a flatten layer before it");
  LS_CHECK(inputs[0][0] >= 1, describe(*this, inputs), "the input has no features");
  LS_CHECK(out_features_ >= 1, describe(*this, inputs), out_features_,
           " output features asked for; a linear layer needs at least 1");
  return Shape{out_features_};
}

std::vector<ParamSpec> Linear::parameter_specs(const std::vector<Shape>& inputs) const {
  output_shape(inputs);
  return weight_bias_specs(Shape{out_features_, inputs[0][0]}, weight_init_);
}

void Linear::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode, const StepInfo&) {
  ops::linear_forward(ctx, inputs[0], weight_operand(ctx, true), bias_operand(ctx), output);
}

void Linear::backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor&, const Tensor& output_grad,
                      std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  ops::linear_backward_weight(ctx, inputs[0], output_grad, weight_grad_);
  if (has_bias_) ops::linear_backward_bias(ctx, output_grad, bias_grad_);
  if (input_grads[0].defined())
    ops::linear_backward_data(ctx, output_grad, weight_operand(ctx, false), input_grads[0],
                              grad_modes[0] == GradMode::add);
}

}  // namespace lockstep
