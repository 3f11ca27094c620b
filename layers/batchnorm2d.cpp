#include "layers/batchnorm2d.h"

#include "base/error.h"
#include "ops/batchnorm.h"
#include "ops/bf16.h"
#include "ops/batchnorm_sync.h"
#include "ops/elementwise.h"
#include "ops/tensor_ops.h"

namespace lockstep {

namespace {

Shape sample_shape(const Tensor& x) {
  const Shape& s = x.shape();
  return s.rank() == 4 ? Shape{s[1], s[2], s[3]} : s;
}

}  // namespace

BatchNorm2d::BatchNorm2d(float eps, float momentum) : eps_(eps) {
  LS_CHECK(eps > 0.0f, "batchnorm2d: eps must be positive, got ", eps);
  LS_CHECK(momentum >= 0.0f && momentum <= 1.0f, "batchnorm2d: momentum must lie in [0, 1], got ", momentum);
  state_.momentum = momentum;
}

std::unique_ptr<BatchNorm2d> BatchNorm2d::with_relu() {
  auto layer = std::make_unique<BatchNorm2d>();
  layer->relu_ = true;
  return layer;
}

std::unique_ptr<BatchNorm2d> BatchNorm2d::with_add_relu() {
  auto layer = with_relu();
  layer->add_ = true;
  return layer;
}

Shape BatchNorm2d::output_shape(const std::vector<Shape>& inputs) const {
  const size_t expected = add_ ? 2 : 1;
  LS_CHECK(inputs.size() == expected, describe(*this, inputs),
           add_ ? "takes two inputs (x, shortcut)" : "takes one input", ", got ", inputs.size());
  if (add_)
    LS_CHECK(inputs[1] == inputs[0], describe(*this, inputs), "the shortcut must have the input's shape");
  const Shape& s = inputs[0];
  LS_CHECK(s.rank() == 3, describe(*this, inputs), "needs a [C, H, W] input, got rank ", s.rank());
  LS_CHECK(s[0] > 0 && s[1] > 0 && s[2] > 0, describe(*this, inputs), "needs non-empty channels and images");
  return s;
}

std::vector<ParamSpec> BatchNorm2d::parameter_specs(const std::vector<Shape>& inputs) const {
  const int64_t c = output_shape(inputs)[0];
  return {{"weight", Shape{c}, Init::ones, false}, {"bias", Shape{c}, Init::zeros, false}};
}

std::vector<ParamSpec> BatchNorm2d::state_specs(const std::vector<Shape>& inputs) const {
  const int64_t c = output_shape(inputs)[0];
  return {{"running_mean", Shape{c}, Init::zeros, false}, {"running_var", Shape{c}, Init::ones, false}};
}

void BatchNorm2d::bind(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                       const std::vector<Tensor>& state) {
  LS_CHECK(params.size() == 2 && grads.size() == 2 && state.size() == 2, "batchnorm2d '", name, "': bind got ",
           params.size(), " parameters, ", grads.size(), " gradients and ", state.size(),
           " state tensors, expected 2 of each");
  weight_ = params[0];
  bias_ = params[1];
  weight_grad_ = grads[0];
  bias_grad_ = grads[1];
  state_.running_mean = state[0];
  state_.running_var = state[1];
  allocate_buffers(weight_.device());
}

void BatchNorm2d::allocate_buffers(Device device) {
  const Shape channels{weight_.numel()};
  state_.batch_mean = Tensor::zeros(channels, device);
  state_.batch_var = Tensor::zeros(channels, device);
  saved_mean_ = Tensor::zeros(channels, device);
  saved_inv_std_ = Tensor::zeros(channels, device);
  saved_values_ = -1;
}

void BatchNorm2d::check_batch(const Tensor& x, const char* pass) const {
  LS_CHECK(weight_.defined(), describe(*this, {sample_shape(x)}), pass, " before bind");
  LS_CHECK(x.shape().rank() == 4 && x.dim(1) == weight_.numel(), describe(*this, {sample_shape(x)}), pass,
           " of a batch ", x.shape().str(), " with ", weight_.numel(), " channels bound");
}

void BatchNorm2d::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode, const StepInfo&) {
  const Tensor& x = inputs.at(0);
  check_batch(x, "forward");
  // The add and ReLU as separate passes after a batch norm that cannot take
  // them. In bf16 a GPU stores each pass's output (a rounding each, where the
  // fused ops round once); the CPU's bf16 mode rounds likewise. The ReLU is exact.
  const auto join = [&] {
    if (!add_ && !relu_) return;
    ops::round_where_gpu_stores_bf16(ctx, output);
    if (add_) ops::add(ctx, output, inputs.at(1), output);
    if (add_) ops::round_where_gpu_stores_bf16(ctx, output);
    if (relu_) ops::relu_forward(ctx, output, output);
  };
  if (mode == Mode::eval) {
    saved_values_ = -1;
    ops::batchnorm_forward_eval(ctx, x, weight_, bias_, state_.running_mean, state_.running_var, eps_, output);
    join();
    return;
  }
  if (state_.batch_mean.device() != x.device()) allocate_buffers(x.device());
  ReplicaGroup* group = ctx.options().sync_batch_norm ? ctx.replica_group() : nullptr;
  synced_ = group && group->size() > 1;
  if (synced_) {
    const int64_t floats = ops::batchnorm_sync_buffer_floats(weight_.numel());
    if (!sync_buffer_.defined() || sync_buffer_.numel() < floats || sync_buffer_.device() != x.device())
      sync_buffer_ = Tensor::empty(Shape{floats}, x.device());
    ops::batchnorm_forward_train_synced(ctx, *group, x, weight_, bias_, eps_, output, state_.batch_mean,
                                        state_.batch_var, saved_mean_, saved_inv_std_, sync_buffer_);
    join();
  } else if (add_) {
    ops::batchnorm_add_relu_forward_train(ctx, x, inputs.at(1), weight_, bias_, eps_, output, state_.batch_mean,
                                          state_.batch_var, saved_mean_, saved_inv_std_);
  } else if (relu_) {
    ops::batchnorm_relu_forward_train(ctx, x, weight_, bias_, eps_, output, state_.batch_mean, state_.batch_var,
                                      saved_mean_, saved_inv_std_);
  } else {
    ops::batchnorm_forward_train(ctx, x, weight_, bias_, eps_, output, state_.batch_mean, state_.batch_var,
                                 saved_mean_, saved_inv_std_);
  }
  saved_values_ = x.dim(0) * x.dim(2) * x.dim(3);
  state_.values_per_channel = saved_values_;
}

void BatchNorm2d::backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                           std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  const Tensor& x = inputs.at(0);
  check_batch(x, "backward");
  LS_CHECK(saved_values_ == x.dim(0) * x.dim(2) * x.dim(3), describe(*this, {sample_shape(x)}),
           "backward of a batch ", x.shape().str(), " needs a training-mode forward of that batch first");
  Tensor* dx = input_grads.at(0).defined() ? &input_grads[0] : nullptr;
  Tensor* dshortcut = add_ && input_grads.at(1).defined() ? &input_grads[1] : nullptr;
  const bool add_shortcut = add_ && grad_modes.at(1) == GradMode::add;
  if (synced_) {
    LS_CHECK(ctx.replica_group(), describe(*this, {sample_shape(x)}),
             "backward of a synchronised forward on a context without its replica group");
    Tensor dy = output_grad;
    if (relu_) {
      // The ReLU's gradient first: into the shortcut's gradient when that is
      // written (it is exactly that), else into a buffer of its own.
      const bool into_shortcut = dshortcut && !add_shortcut;
      dy = into_shortcut ? *dshortcut
                         : Tensor::empty(output_grad.shape(), output_grad.device(), output_grad.dtype())
                               .with_format(output_grad.format());
      ops::relu_backward(ctx, output, output_grad, dy, false);
      if (dshortcut && !into_shortcut) ops::copy_or_add(ctx, dy, *dshortcut, true);
    }
    ops::batchnorm_backward_synced(ctx, *ctx.replica_group(), x, dy, weight_, saved_mean_, saved_inv_std_,
                                   weight_grad_, bias_grad_, dx, grad_modes.at(0) == GradMode::add, sync_buffer_);
    return;
  }
  if (add_) {
    ops::batchnorm_add_relu_backward(ctx, x, output, output_grad, weight_, saved_mean_, saved_inv_std_, weight_grad_,
                                     bias_grad_, dx, grad_modes.at(0) == GradMode::add, dshortcut, add_shortcut);
    return;
  }
  if (relu_) {
    ops::batchnorm_relu_backward(ctx, x, output, output_grad, weight_, saved_mean_, saved_inv_std_, weight_grad_,
                                 bias_grad_, dx, grad_modes.at(0) == GradMode::add);
    return;
  }
  ops::batchnorm_backward(ctx, x, output_grad, weight_, saved_mean_, saved_inv_std_, weight_grad_, bias_grad_, dx,
                          grad_modes.at(0) == GradMode::add);
}

BatchNormState* BatchNorm2d::batch_norm_state() {
  state_.name = name;
  return &state_;
}

}  // namespace lockstep
