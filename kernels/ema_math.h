#pragma once
// The exponential moving average of the weights and running statistics, as
// timm's ModelEmaV3 with its warm-up (use_warmup=True, warmup_gamma 1,
// warmup_power 2/3, min_decay 0, update_after_step 0), called as timm's
// train.py calls it, after each optimizer step with step = the updates so
// far. In lockstep's step index k (0 for the first step, so timm's step is
// k + 1), the update after step k is
//   decay_k = 0 for k = 0 (the average becomes the weights);
//   decay_k = min(D, 1 - (1 + k)^(-2/3)) otherwise;
//   average = lerp(average, value, 1 - decay_k), torch's lerp.
// decay_k is worked out in double and 1 - decay_k rounded to float, as
// PyTorch takes timm's Python float weight. Written once for the CPU loops
// and the CUDA kernels; inside a replayed CUDA graph k comes from device
// memory (SgdHyper::step_on_device).
#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"

namespace lockstep {

constexpr double kEmaWarmupPower = 2.0 / 3.0;

// decay_k for the decay D (0 < D < 1).
LS_HD double ema_decay_at(double decay, uint64_t step_index) {
  if (step_index == 0) return 0.0;
  const double warm = 1.0 - std::pow(1.0 + double(step_index), -kEmaWarmupPower);
  const double capped = warm < decay ? warm : decay;
  return capped > 0.0 ? capped : 0.0;
}

// The lerp weight of step k: 1 - decay_k, rounded to float.
LS_HD float ema_weight(double decay, uint64_t step_index) {
  return float(1.0 - ema_decay_at(decay, step_index));
}

// torch.lerp(average, value, weight), in PyTorch's two forms (the second
// where the weight is large, so a weight of 1 gives the value exactly).
LS_HD float ema_lerp(float average, float value, float weight) {
  const float diff = value - average;
  return weight < 0.5f ? average + weight * diff : value - diff * (1.0f - weight);
}

}  // namespace lockstep
