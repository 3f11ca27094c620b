#pragma once
// The fused optimizer step over a replica's arenas, SGD with momentum or
// AdamW: one pass (one kernel launch on a GPU) updates every parameter and
// the optimizer's state and clears the gradient arena for the next step.
#include "runtime/arena.h"
#include "runtime/context.h"
#include "kernels/sgd_math.h"

namespace lockstep {

enum class Optimizer { sgd, adamw };

// The optimizer and its hyper-parameters (the learning rate aside, which
// changes every step). The name is SGD's, kept for its many users.
struct SgdConfig {
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  bool nesterov = false;
  // Gradient clipping by global L2 norm (PyTorch's clip_grad_norm_ over every
  // parameter, before weight decay); 0 turns it off.
  float clip_grad_norm = 0.0f;
  // Fine-tuning: the first `backbone_elements` of the arenas (the layers
  // before the classifier, Graph::head_param_offset) step with
  // lr * backbone_lr_scale, 0 freezing them. backbone_elements must be 0, the
  // whole arena or where a parameter starts.
  int64_t backbone_elements = 0;
  float backbone_lr_scale = 1.0f;
  // AdamW (PyTorch 1.13's torch.optim.AdamW, amsgrad off; kernels/adamw_math.h):
  // `momentum` and `nesterov` are then unused, weight_decay is decoupled
  // (w *= 1 - lr * wd, on the segments marked decay), and the arenas need
  // their second-moment arena (ParameterArenas::add_adamw_state).
  Optimizer optimizer = Optimizer::sgd;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  // The exponential moving average of the weights (timm's ModelEmaV3 with its
  // warm-up; kernels/ema_math.h): D in (0, 1), 0 for none. The arenas then
  // need their average (ParameterArenas::add_ema), which the same pass moves
  // after each update, for either optimizer.
  double ema_decay = 0.0;
};

namespace ops {

// `lr_on_device` (GPU only, may be null): device memory the kernel reads the
// learning rate from when it runs (a step replayed from a CUDA graph); `lr`
// is then only checked. Where the arenas have a bf16 copy of the weights
// (ParameterArenas::params_bf16, precision bf16), the same pass writes it
// from the updated fp32 master weights, and it is current afterwards.
void sgd_step(Context& ctx, ParameterArenas& arenas, const SgdConfig& config, float lr,
              const float* lr_on_device = nullptr);

// The step of index `step` (0 for the first; AdamW's bias corrections use
// t = step + 1, the moving average's warm-up timm's step + 1), read from
// `step_on_device` when set (GPU only: a step replayed from a CUDA graph, as
// `lr_on_device`). SGD without a moving average ignores the step.
void optimizer_step(Context& ctx, ParameterArenas& arenas, const SgdConfig& config, float lr, uint64_t step,
                    const float* lr_on_device = nullptr, const uint64_t* step_on_device = nullptr);

// The moving average of the running statistics after step `step` (read from
// `step_on_device` when set, as optimizer_step): average = lerp(average,
// value, 1 - decay_step) (kernels/ema_math.h), both flat tensors of one size.
void ema_average(Context& ctx, Tensor& average, const Tensor& value, double decay, uint64_t step,
                 const uint64_t* step_on_device = nullptr);

}  // namespace ops

}  // namespace lockstep
