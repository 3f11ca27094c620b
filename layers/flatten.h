#pragma once
// Flatten: [C, H, W] (or any per-sample shape) -> [C*H*W], in NCHW order
// whatever the input's memory format, as PyTorch's flatten of a
// channels_last tensor gives the logical order: the linear layer after it
// sees the same features, so weights, checkpoints and predictions do not
// depend on the format.
// An NCHW input (or one whose pixels are 1x1, which lies alike in NHWC): the
// graph's memory plan may make the output a view of the input and the
// input's written gradient the output gradient's buffer; then forward and
// backward copy nothing, otherwise they copy (or add). An NHWC input with
// more than one pixel: forward transposes it to NCHW into the output and
// backward transposes the gradient back (one pass over the feature map each
// way, and no aliasing: the output and gradient take buffers of their own).
// No parameters, nothing saved.
#include "layers/layer.h"

namespace lockstep {

class Flatten final : public Layer {
public:
  std::string type() const override { return "flatten"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  bool backward_reads_input(size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }
  bool output_may_alias_input(MemoryFormat layout) const override { return layout == MemoryFormat::nchw; }
  bool input_grad_may_alias_output_grad(MemoryFormat layout) const override { return layout == MemoryFormat::nchw; }

private:
  Tensor transposed_grad_;  // an NHWC input gradient that is added to: the transposed gradient first
};

}  // namespace lockstep
