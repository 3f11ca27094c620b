#pragma once
// Linear: y = x weight^T + bias over flat [F] samples; output [O]. Saves
// nothing: backward reads its input again. Backward writes the weight and
// bias gradients and writes or adds the input gradient.
#include "layers/weighted_layer.h"

namespace lockstep {

class Linear final : public WeightedLayer {
public:
  explicit Linear(int64_t out_features, bool bias = true, Init weight_init = Init::fan_in_uniform);

  std::string type() const override { return "linear"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  // "weight" [O, F] (decayed), then "bias" [O] when the layer has one.
  std::vector<ParamSpec> parameter_specs(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  // The weight gradient reads the input; nothing reads the output.
  bool backward_reads_output() const override { return false; }

  int64_t out_features() const { return out_features_; }

private:
  int64_t out_features_;
  Init weight_init_;
};

}  // namespace lockstep
