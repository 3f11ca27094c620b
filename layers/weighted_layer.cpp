#include "layers/weighted_layer.h"

#include "base/error.h"

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

}  // namespace lockstep
