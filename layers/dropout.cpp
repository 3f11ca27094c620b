#include "layers/dropout.h"

#include "base/error.h"
#include "ops/dropout.h"
#include "ops/tensor_ops.h"
#include "kernels/random_math.h"

namespace lockstep {

Dropout::Dropout(float p) : p_(p) {
  LS_CHECK(p >= 0.0f && p < 1.0f, "dropout: p = ", p, " is outside [0, 1)");
}

uint64_t Dropout::salt() const { return hash_bytes(name.data(), name.size()); }

Shape Dropout::output_shape(const std::vector<Shape>& inputs) const {
  LS_CHECK(inputs.size() == 1, describe(*this, inputs), "takes one input, got ", inputs.size());
  LS_CHECK(inputs[0].rank() >= 1 && inputs[0].numel() > 0, describe(*this, inputs),
           "the input must have no zero extent");
  return inputs[0];
}

void Dropout::forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
                      const StepInfo& step) {
  last_mode_ = mode;
  last_step_ = step;
  if (mode == Mode::train && p_ > 0.0f) return ops::dropout_forward(ctx, step, inputs[0], output, p_, salt());
  ops::copy_or_add(ctx, inputs[0], output, false);
}

void Dropout::backward(Context& ctx, const std::vector<Tensor>&, const Tensor&, const Tensor& output_grad,
                       std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) {
  if (!input_grads[0].defined()) return;
  bool accumulate = grad_modes[0] == GradMode::add;
  if (last_mode_ == Mode::train && p_ > 0.0f)
    return ops::dropout_backward(ctx, last_step_, output_grad, input_grads[0], p_, salt(), accumulate);
  ops::copy_or_add(ctx, output_grad, input_grads[0], accumulate);
}

}  // namespace lockstep
