#pragma once
// Conv2d: y = conv(x, weight) + bias over [C, H, W] samples, square kernel,
// stride and zero padding; output [O, OH, OW]. Saves nothing: backward reads
// its input again. Backward writes the weight and bias gradients and writes
// or adds the input gradient.
// Images in NHWC on a GPU: cuDNN's channels-last convolutions take the filter
// channels-last too (KRSC, [O, K, K, C]; PyTorch likewise turns a conv's
// weight channels_last beside a channels_last input), so forward transposes
// the weight into a KRSC scratch copy, backward data reads that copy and
// backward filter writes a KRSC gradient that is transposed back into the
// gradient arena. The master weights and their gradients stay KCRS ([O, C,
// K, K]): checkpoints, SGD and the all-reduce do not see the format. On the
// CPU oneDNN's channels-last kernels take the KCRS weight as it is (reordered
// per call to its own blocked filter layout, as for NCHW images).
// Precision bf16: the filter is the bf16 weight copy (on a GPU its KRSC copy
// is bf16 too); the weight gradient is each FP32 sum rounded once to bf16,
// as cuDNN writes it on a GPU and the CPU's bf16 mode rounds it after its
// FP32 backward filter (ops/conv.h), so both devices train alike.
#include "layers/weighted_layer.h"

namespace lockstep {

class Conv2d final : public WeightedLayer {
public:
  Conv2d(int64_t out_channels, int kernel, int stride = 1, int padding = 0, bool bias = true,
         Init weight_init = Init::fan_in_uniform);

  std::string type() const override { return "conv2d"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  // "weight" [O, C, K, K] (decayed), then "bias" [O] when the layer has one.
  std::vector<ParamSpec> parameter_specs(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  // The weight gradient reads the input; nothing reads the output.
  bool backward_reads_output() const override { return false; }

  int64_t out_channels() const { return out_channels_; }
  int kernel() const { return kernel_; }
  int stride() const { return stride_; }
  int padding() const { return padding_; }

private:
  // The weight the convolution reads for `x`: `weight`, or its KRSC copy
  // (made here) for NHWC images on a GPU.
  const Tensor& filter_for(Context& ctx, const Tensor& x, const Tensor& weight);
  static bool krsc(const Context& ctx, const Tensor& x);

  Tensor weight_krsc_, weight_grad_krsc_;  // NHWC on a GPU only
  int64_t out_channels_;
  int kernel_, stride_, padding_;
  Init weight_init_;
};

}  // namespace lockstep
