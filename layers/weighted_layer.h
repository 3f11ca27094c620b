#pragma once
// The part conv2d and linear share: a weight (decayed) and an optional bias
// [O] initialised with the weight's fan-in, and their views into the arenas.
#include "layers/layer.h"

namespace lockstep {

class WeightedLayer : public Layer {
public:
  bool has_bias() const { return has_bias_; }
  void bind(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
            const std::vector<Tensor>& state) override;
  void bind_bf16(const std::vector<Tensor>& params_bf16) override;

protected:
  explicit WeightedLayer(bool bias) : has_bias_(bias) {}
  // "weight" of `weight_shape` ([O, ...]), then "bias" [O] when the layer has one.
  std::vector<ParamSpec> weight_bias_specs(const Shape& weight_shape, Init weight_init) const;
  // The weight the convolution or GEMM multiplies by: the FP32 master weight,
  // or in precision bf16 the bf16 copy: itself on a GPU (bf16 operands),
  // widened (exactly) into FP32 storage on the CPU for its FP32-accumulating
  // kernels. Forward widens it (`widen`), backward reuses that: the copy does
  // not change in between.
  const Tensor& weight_operand(Context& ctx, bool widen);
  // The bias forward adds, or null: the FP32 master bias, or in precision
  // bf16 its bf16 copy (the one the fused SGD writes beside the weight's),
  // itself on a GPU, widened on the CPU, so both devices add the same
  // bf16-rounded bias to the FP32 sum.
  const Tensor* bias_operand(Context& ctx);

  bool has_bias_;
  Tensor weight_, bias_, weight_grad_, bias_grad_;
  Tensor weight_bf16_, bias_bf16_, weight_widened_, bias_widened_;  // precision bf16 only

private:
  void check_bf16_bound() const;
};

}  // namespace lockstep
