#include "kernels/cpu/loss_cpu.h"

#include "kernels/loss_math.h"

namespace lockstep::cpu {

LossSums softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t rows, int classes, float scale,
                               float* grad, float smoothing, bool mixed) {
  LossSums sums;
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * classes;
    float lse = row_logsumexp(z, classes, row_max(z, classes));
    float z_sum = 0.0f;
    if (smoothing != 0.0f)
      for (int k = 0; k < classes; ++k) z_sum += z[k];
    const float z_mean = z_sum / static_cast<float>(classes);
    if (mixed) {
      const MixedTarget t = mixed_target_of(labels + r * kMixedTargetWidth);
      sums.loss_sum += mixed_row_loss(lse, z[t.a], z[t.b], z_mean, t.lam, smoothing);
      sums.correct += row_argmax(z, classes) == t.a ? 1 : 0;
      if (grad)
        for (int k = 0; k < classes; ++k)
          grad[r * classes + k] =
              cross_entropy_grad(z[k], lse, mixed_target(k == t.a, k == t.b, t.lam, smoothing, classes), scale);
      continue;
    }
    sums.loss_sum += row_loss(lse, z[labels[r]], z_mean, smoothing);
    sums.correct += row_argmax(z, classes) == labels[r] ? 1 : 0;
    if (grad)
      for (int k = 0; k < classes; ++k)
        grad[r * classes + k] =
            cross_entropy_grad(z[k], lse, smoothed_target(k == labels[r], smoothing, classes), scale);
  }
  return sums;
}

}  // namespace lockstep::cpu
