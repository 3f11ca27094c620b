#pragma once
// AdamW as PyTorch 1.13's torch.optim.AdamW (amsgrad off, its default
// single-tensor path), for step t = 1, 2, ...:
//   w *= 1 - lr*wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//   w += (-lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps);  g = 0.
// PyTorch works out the scalars (1 - lr*wd, lr / (1 - b1^t), sqrt(1 - b2^t))
// in double on the host and rounds each to float for the tensor ops; so do
// these. Written once for the CPU loop and the fused CUDA kernel, so both
// compute the same scalars bit for bit, on the host or inside a replayed
// CUDA graph where t comes from device memory.
#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/sgd_math.h"

namespace lockstep {

// b^t by repeated squaring: only IEEE double multiplications, so the host
// and a GPU get the same bits (pow() may differ in its last bit between them).
LS_HD double power_of(double b, uint64_t t) {
  double result = 1.0;
  while (t > 0) {
    if (t & 1) result *= b;
    b *= b;
    t >>= 1;
  }
  return result;
}

// The per-step scalars of one learning rate (an element's: the backbone's may be scaled).
struct AdamwScalars {
  float decay_factor;   // 1 - lr * wd, for the segments marked decay
  float neg_step_size;  // -lr / (1 - b1^t)
  float bias2_sqrt;     // sqrt(1 - b2^t)
};

// The step the update is: h.step (0 for the first) or, where set, *h.step_on_device.
LS_HD uint64_t adamw_step_index(const SgdHyper& h) { return h.step_on_device ? *h.step_on_device : h.step; }

LS_HD AdamwScalars adamw_scalars(const SgdHyper& h, float lr, uint64_t step_index) {
  const uint64_t t = step_index + 1;
  const double bias1 = 1.0 - power_of(double(h.beta1), t);
  const double bias2 = 1.0 - power_of(double(h.beta2), t);
  return {float(1.0 - double(lr) * double(h.weight_decay)), float(-(double(lr) / bias1)), float(std::sqrt(bias2))};
}

// One element; `decayed`: its segment takes weight decay.
LS_HD void adamw_element(float& w, float& g, float& m, float& v, const SgdHyper& h, const AdamwScalars& s,
                         bool decayed) {
  if (decayed) w *= s.decay_factor;
  const float grad = g;
  m = m * h.beta1 + h.one_minus_beta1 * grad;
  v = v * h.beta2 + h.one_minus_beta2 * grad * grad;
  const float denom = std::sqrt(v) / s.bias2_sqrt + h.eps;
  w += s.neg_step_size * m / denom;
  g = 0.0f;
}

}  // namespace lockstep
