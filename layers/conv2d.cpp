#include "layers/conv2d.h"

#include "base/error.h"
#include "ops/bf16.h"
#include "ops/conv.h"
#include "ops/memory_format.h"
#include "kernels/conv_geometry.h"

namespace lockstep {

Conv2d::Conv2d(int64_t out_channels, int kernel, int stride, int padding, bool bias, Init weight_init)
    : WeightedLayer(bias), out_channels_(out_channels), kernel_(kernel), stride_(stride), padding_(padding),
      weight_init_(weight_init) {}

Shape Conv2d::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 1 && inputs[0].rank() == 3, describe(*this, inputs),
           "takes one [C, H, W] input per sample");
  const Shape& in = inputs[0];
  ConvGeometry g;
  std::string problem = ConvGeometry::make(1, in[0], in[1], in[2], out_channels_, kernel_, stride_, padding_, g);
  if (!problem.empty())
    LS_FAIL(describe(*this, inputs), problem, " (out_channels ", out_channels_, ", kernel ", kernel_, ", stride ",
            stride_, ", padding ", padding_, ")");
  return Shape{g.out_channels, g.out_h, g.out_w};
}

std::vector<ParamSpec> Conv2d::parameter_specs(const std::vector<Shape>& inputs) const {
  output_shape(inputs);
  return weight_bias_specs(Shape{out_channels_, inputs[0][0], kernel_, kernel_}, weight_init_);
}

bool Conv2d::krsc(const Context& ctx, const Tensor& x) {
  return x.format() == MemoryFormat::nhwc && ctx.device().is_cuda();
}

const Tensor& Conv2d::filter_for(Context& ctx, const Tensor& x, const Tensor& weight) {
  if (!krsc(ctx, x)) return weight;
  if (!weight_krsc_.defined() || weight_krsc_.device() != weight.device() || weight_krsc_.dtype() != weight.dtype())
    weight_krsc_ = Tensor::empty(weight.shape(), weight.device(), weight.dtype()).with_format(MemoryFormat::nhwc);
  ops::convert_format(ctx, weight, weight_krsc_);
  return weight_krsc_;
}

void Conv2d::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode, const StepInfo&) {
  const Tensor& w = filter_for(ctx, inputs[0], weight_operand(ctx, true));
  ops::conv2d_forward(ctx, inputs[0], w, bias_operand(ctx), output, stride_, padding_);
}

void Conv2d::backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor&, const Tensor& output_grad,
                      std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  const Tensor& x = inputs[0];
  if (krsc(ctx, x)) {
    if (!weight_grad_krsc_.defined() || weight_grad_krsc_.device() != weight_grad_.device())
      weight_grad_krsc_ = Tensor::empty(weight_grad_.shape(), weight_grad_.device()).with_format(MemoryFormat::nhwc);
    ops::conv2d_backward_filter(ctx, x, output_grad, weight_grad_krsc_, stride_, padding_);
    ops::convert_format(ctx, weight_grad_krsc_, weight_grad_);
  } else {
    ops::conv2d_backward_filter(ctx, x, output_grad, weight_grad_, stride_, padding_);
  }
  // A GPU's bf16 weight gradient is cuDNN's bf16 dw widened (ops/conv.h):
  // the CPU's bf16 mode rounds its FP32 one likewise.
  ops::round_where_gpu_stores_bf16(ctx, weight_grad_);
  if (has_bias_) ops::conv2d_backward_bias(ctx, output_grad, bias_grad_);
  if (input_grads[0].defined()) {
    // The weights have not changed since forward: its KRSC copy still holds them.
    const Tensor& w = krsc(ctx, x) ? weight_krsc_ : weight_operand(ctx, false);
    ops::conv2d_backward_data(ctx, output_grad, w, input_grads[0], stride_, padding_,
                              grad_modes[0] == GradMode::add);
  }
}

}  // namespace lockstep
