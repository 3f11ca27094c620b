#include "layers/weighted_layer.h"

#include "base/error.h"
#include "ops/bf16.h"

namespace lockstep {

std::vector<ParamSpec> WeightedLayer::weight_bias_specs(const Shape& weight_shape, Init weight_init) const {
  std::vector<ParamSpec> specs{{"weight", weight_shape, weight_init, true, 0}};
  if (has_bias_) specs.push_back({"bias", Shape{weight_shape[0]}, Init::fan_in_uniform, false, weight_shape.per_sample()});
  return specs;
}

void WeightedLayer::bind(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                         const std::vector<Tensor>&) {
  size_t expected = has_bias_ ? 2 : 1;
  LS_CHECK(params.size() == expected && grads.size() == expected, type(), " '", name, "': bound to ", params.size(),
           " parameters, expected ", expected);
  weight_ = params[0];
  weight_grad_ = grads[0];
  if (has_bias_) {
    bias_ = params[1];
    bias_grad_ = grads[1];
  }
}

void WeightedLayer::bind_bf16(const std::vector<Tensor>& params_bf16) {
  const size_t expected = has_bias_ ? 2 : 1;
  LS_CHECK(params_bf16.size() == expected, type(), " '", name, "': bound to ", params_bf16.size(),
           " bf16 parameters, expected ", expected);
  weight_bf16_ = params_bf16[0];
  if (has_bias_) bias_bf16_ = params_bf16[1];
}

void WeightedLayer::check_bf16_bound() const {
  LS_CHECK(weight_bf16_.defined(), type(), " '", name,
           "': precision bf16 without a bf16 copy of the weights (the model binds it before a bf16 forward)");
}

const Tensor& WeightedLayer::weight_operand(Context& ctx, bool widen) {
  if (!ctx.precision_policy().bf16) return weight_;
  check_bf16_bound();
  if (ctx.precision_policy().bf16_operands) return weight_bf16_;  // cuDNN and cuBLAS take bf16 operands
  if (!weight_widened_.defined() || weight_widened_.device() != weight_bf16_.device())
    weight_widened_ = Tensor::empty(weight_.shape(), weight_.device());
  if (widen) ops::convert(ctx, weight_bf16_, weight_widened_);
  return weight_widened_;
}

const Tensor* WeightedLayer::bias_operand(Context& ctx) {
  if (!has_bias_) return nullptr;
  if (!ctx.precision_policy().bf16) return &bias_;
  check_bf16_bound();
  if (ctx.precision_policy().bf16_operands) return &bias_bf16_;
  if (!bias_widened_.defined() || bias_widened_.device() != bias_bf16_.device())
    bias_widened_ = Tensor::empty(bias_.shape(), bias_.device());
  ops::convert(ctx, bias_bf16_, bias_widened_);
  return &bias_widened_;
}

}  // namespace lockstep
