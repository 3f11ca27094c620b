#include "layers/flatten.h"

#include "base/error.h"
#include "ops/memory_format.h"
#include "ops/tensor_ops.h"

namespace lockstep {

namespace {
// An NHWC batch whose elements lie otherwise than NCHW's (more than one pixel).
bool transposed(const Tensor& t) { return t.format() == MemoryFormat::nhwc && t.dim(2) * t.dim(3) > 1; }
// The same memory labelled NCHW: an NHWC batch of 1x1 pixels lies alike.
Tensor as_nchw(const Tensor& t) { return t.with_format(MemoryFormat::nchw); }
}  // namespace

Shape Flatten::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 1, describe(*this, inputs), "takes one input, got ", inputs.size());
  LS_CHECK(inputs[0].rank() >= 1 && inputs[0].rank() <= 3 && inputs[0].numel() > 0, describe(*this, inputs),
           "the input must be [C, H, W], [H, W] or [F] with no zero extent");
  return Shape{inputs[0].numel()};
}

void Flatten::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode, const StepInfo&) {
  const Tensor& x = inputs[0];
  if (transposed(x)) {
    Tensor y = output.view(0, x.shape());  // [N, C, H, W] in NCHW: the flat order the linear layer reads
    ops::convert_format(ctx, x, y);
    return;
  }
  const Tensor src = as_nchw(x);
  if (!same_buffer(src, output)) ops::copy_or_add(ctx, src, output, false);
}

void Flatten::backward(Context& ctx, const std::vector<Tensor>&, const Tensor&, const Tensor& output_grad,
                       std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  if (!input_grads[0].defined()) return;
  Tensor& dx = input_grads[0];
  const bool add = grad_modes[0] == GradMode::add;
  if (transposed(dx)) {
    const Tensor dy = output_grad.view(0, dx.shape());
    if (!add) return ops::convert_format(ctx, dy, dx);
    if (!transposed_grad_.defined() || transposed_grad_.numel() < dx.numel() ||
        transposed_grad_.device() != dx.device() || transposed_grad_.dtype() != dx.dtype())
      transposed_grad_ = Tensor::empty(Shape{dx.numel()}, dx.device(), dx.dtype());
    Tensor t = transposed_grad_.view(0, dx.shape()).with_format(MemoryFormat::nhwc);
    ops::convert_format(ctx, dy, t);
    ops::copy_or_add(ctx, t, dx, true);
    return;
  }
  Tensor dst = as_nchw(dx);
  if (add || !same_buffer(dst, output_grad)) ops::copy_or_add(ctx, output_grad, dst, add);
}

}  // namespace lockstep
