#include "layers/linear.h"

#include "engine/error.h"
#include "engine/ops/linear.h"

namespace lockstep {

Linear::Linear(int64_t out_features, bool bias) : out_features_(out_features), has_bias_(bias) {}

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
  int64_t f = inputs[0][0];
  std::vector<ParamSpec> specs{{"weight", Shape{out_features_, f}, Init::fan_in_uniform, true, 0}};
  if (has_bias_) specs.push_back({"bias", Shape{out_features_}, Init::fan_in_uniform, false, f});
  return specs;
}

void Linear::bind(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>&) {
  size_t expected = has_bias_ ? 2 : 1;
  LS_CHECK(params.size() == expected && grads.size() == expected, "linear '", name, "': bound to ", params.size(),
           " parameters, expected ", expected);
  weight_ = params[0];
  weight_grad_ = grads[0];
  if (has_bias_) {
    bias_ = params[1];
    bias_grad_ = grads[1];
  }
}

void Linear::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode) {
  ops::linear_forward(ctx, inputs[0], weight_, has_bias_ ? &bias_ : nullptr, output);
}

void Linear::backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor&, const Tensor& output_grad,
                      std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  ops::linear_backward_weight(ctx, inputs[0], output_grad, weight_grad_);
  if (has_bias_) ops::linear_backward_bias(ctx, output_grad, bias_grad_);
  if (input_grads[0].defined())
    ops::linear_backward_data(ctx, output_grad, weight_, input_grads[0], grad_modes[0] == GradMode::add);
}

}  // namespace lockstep
