#pragma once
// SGD with momentum, PyTorch semantics (dampening 0):
//   g += wd * w;  v = mu * v + g;  w -= lr * (nesterov ? g + mu * v : v);  g = 0.
// Written once for the CPU loop and the fused CUDA kernel.
#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"

namespace lockstep {

struct SgdHyper {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;  // applied only to segments marked decay
  bool nesterov = false;
  // Gradient clipping: when set, every gradient is first multiplied by
  // *grad_scale (device memory on a GPU, so the step never waits for the host).
  const float* grad_scale = nullptr;
  // Where set (a GPU; a step replayed from a CUDA graph): the learning rate
  // in device memory, read when the kernel runs instead of `lr`, so one
  // captured graph follows a schedule that changes every step.
  const float* lr_on_device = nullptr;
  // Fine-tuning: elements [0, scaled_elements) of the arena (the pretrained
  // backbone, laid out before the classifier) step with lr * lr_scale; 0
  // frozen, 1 (or scaled_elements 0) as every other element.
  int64_t scaled_elements = 0;
  float lr_scale = 1.0f;
  // AdamW (kernels/adamw_math.h) instead of SGD: `momentum` and `nesterov`
  // are then unused, the momentum arena holds exp_avg and a second arena
  // exp_avg_sq. one_minus_beta* are 1 - beta* worked out in double and
  // rounded, as PyTorch passes them. `step` is the step's index (0 for the
  // first, t - 1), or, where set, *step_on_device (a replayed CUDA graph).
  bool adamw = false;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float one_minus_beta1 = 0.1f, one_minus_beta2 = 0.001f;
  uint64_t step = 0;
  const uint64_t* step_on_device = nullptr;
  // Where above 0: the same pass also moves the exponential moving average
  // of the updated fp32 weights (kernels/ema_math.h) with this decay D, at
  // the step above (SGD reads the step for it too).
  double ema_decay = 0.0;
};

// The learning rate of the arena element at `element`, for `lr` (the step's rate).
LS_HD float element_lr(const SgdHyper& h, float lr, int64_t element) {
  return element < h.scaled_elements ? lr * h.lr_scale : lr;
}

// PyTorch's clip_grad_norm_: the gradients, taken as one vector of L2 norm
// sqrt(sum_squares), are scaled by max_norm / (norm + 1e-6) when that is
// below 1, and left alone otherwise.
LS_HD float clip_coefficient(double sum_squares, float max_norm) {
  const double coefficient = double(max_norm) / (std::sqrt(sum_squares) + 1e-6);
  return coefficient < 1.0 ? float(coefficient) : 1.0f;
}

LS_HD void sgd_momentum_element(float& w, float& g, float& v, float lr, float momentum, float decay, bool nesterov) {
  float grad = g + decay * w;
  float velocity = momentum * v + grad;
  v = velocity;
  w -= lr * (nesterov ? grad + momentum * velocity : velocity);
  g = 0.0f;
}

}  // namespace lockstep
