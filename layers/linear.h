#pragma once
// Linear: y = x weight^T + bias over flat [F] samples; output [O]. Saves
// nothing: backward reads its input again. Backward writes the weight and
// bias gradients and writes or adds the input gradient.
#include "layers/layer.h"

namespace lockstep {

class Linear final : public Layer {
public:
  explicit Linear(int64_t out_features, bool bias = true);

  std::string type() const override { return "linear"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  // "weight" [O, F] (decayed), then "bias" [O] when the layer has one.
  std::vector<ParamSpec> parameter_specs(const std::vector<Shape>& inputs) const override;
  void bind(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
            const std::vector<Tensor>& state) override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;

  int64_t out_features() const { return out_features_; }
  bool has_bias() const { return has_bias_; }

private:
  int64_t out_features_;
  bool has_bias_;
  Tensor weight_, bias_, weight_grad_, bias_grad_;
};

}  // namespace lockstep
