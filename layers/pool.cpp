#include "layers/pool.h"

#include "base/error.h"
#include "ops/pool.h"

namespace lockstep {

namespace {

PoolWindow checked_window(const char* type, int kernel, int stride, int padding) {
  PoolWindow w{kernel, stride == 0 ? kernel : stride, padding};
  LS_CHECK(stride >= 0, type, ": stride ", stride, " must be at least 1 (or 0 for the kernel size)");
  std::string why = pool_window_error(w);
  LS_CHECK(why.empty(), type, " with ", pool_window_text(w), ": ", why);
  return w;
}

}  // namespace

WindowPool::WindowPool(const char* type, int kernel, int stride, int padding)
    : window_(checked_window(type, kernel, stride, padding)) {}

Shape WindowPool::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 1, describe(*this, inputs), "takes one input");
  LS_CHECK(inputs[0].rank() == 3 && inputs[0][0] > 0, describe(*this, inputs), "the input must be [C, H, W], C > 0");
  std::string why = pool_error(inputs[0][1], inputs[0][2], window_);
  LS_CHECK(why.empty(), describe(*this, inputs), pool_window_text(window_), ": ", why);
  return Shape{inputs[0][0], pool_output_extent(inputs[0][1], window_), pool_output_extent(inputs[0][2], window_)};
}

void MaxPool2d::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode, const StepInfo&) {
  ops::max_pool2d_forward(ctx, inputs[0], output, window_);
}

void MaxPool2d::backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output,
                         const Tensor& output_grad, std::vector<Tensor>& input_grads,
                         const std::vector<GradMode>& grad_modes) {
  if (input_grads[0].defined())
    ops::max_pool2d_backward(ctx, inputs[0], output, output_grad, input_grads[0], window_,
                             grad_modes[0] == GradMode::add);
}

void AvgPool2d::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode, const StepInfo&) {
  ops::avg_pool2d_forward(ctx, inputs[0], output, window_);
}

void AvgPool2d::backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output,
                         const Tensor& output_grad, std::vector<Tensor>& input_grads,
                         const std::vector<GradMode>& grad_modes) {
  if (input_grads[0].defined())
    ops::avg_pool2d_backward(ctx, inputs[0], output, output_grad, input_grads[0], window_,
                             grad_modes[0] == GradMode::add);
}

Shape GlobalAvgPool::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 1, describe(*this, inputs), "takes one input");
  LS_CHECK(inputs[0].rank() == 3 && inputs[0].numel() > 0, describe(*this, inputs),
           "the input must be [C, H, W] with no zero extent");
  return Shape{inputs[0][0], 1, 1};
}

void GlobalAvgPool::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode, const StepInfo&) {
  ops::global_avg_pool_forward(ctx, inputs[0], output);
}

void GlobalAvgPool::backward(Context& ctx, const std::vector<Tensor>&, const Tensor&, const Tensor& output_grad,
                             std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  if (input_grads[0].defined())
    ops::global_avg_pool_backward(ctx, output_grad, input_grads[0], grad_modes[0] == GradMode::add);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(int64_t out_h, int64_t out_w) : out_h_(out_h), out_w_(out_w) {
  LS_CHECK(out_h >= 1 && out_w >= 1, "adaptive_avgpool2d: output size ", out_h, "x", out_w, " must be at least 1x1");
}

Shape AdaptiveAvgPool2d::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 1, describe(*this, inputs), "takes one input");
  LS_CHECK(inputs[0].rank() == 3 && inputs[0].numel() > 0, describe(*this, inputs),
           "the input must be [C, H, W] with no zero extent");
  return Shape{inputs[0][0], out_h_, out_w_};
}

void AdaptiveAvgPool2d::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode,
                                const StepInfo&) {
  ops::adaptive_avg_pool2d_forward(ctx, inputs[0], output);
}

void AdaptiveAvgPool2d::backward(Context& ctx, const std::vector<Tensor>&, const Tensor&, const Tensor& output_grad,
                                 std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  if (input_grads[0].defined())
    ops::adaptive_avg_pool2d_backward(ctx, output_grad, input_grads[0], grad_modes[0] == GradMode::add);
}

}  // namespace lockstep
