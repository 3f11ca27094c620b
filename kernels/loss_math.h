#pragma once
// Softmax cross-entropy on one sample's logits row, written once for the CPU
// loop and the CUDA kernel. The loss of a row is logsumexp(z) - z[label];
// its gradient is scale * (softmax(z) - onehot(label)). With label smoothing
// e (0 <= e < 1) the target is (1 - e) onehot(label) + e / classes, as
// PyTorch's CrossEntropyLoss(label_smoothing=e): the loss is logsumexp(z) -
// (1 - e) z[label] - e mean(z), the gradient scale * (softmax(z) - target).
// Mixed targets (mixup, CutMix; data/mix.h) weigh two smoothed one-hots,
// lam on label a and 1 - lam on label b, as timm's mixup_target.
#include <math.h>
#include <stdint.h>

#include "kernels/float_bits.h"
#include "kernels/host_device.h"

namespace lockstep {

// What a loss pass returns to the host: the sum of the rows' losses and the
// count of rows whose top-1 prediction is the label.
struct LossSums {
  double loss_sum = 0.0;
  int64_t correct = 0;
};

LS_HD float row_max(const float* z, int classes) {
  float m = z[0];
  for (int k = 1; k < classes; ++k) m = z[k] > m ? z[k] : m;
  return m;
}

// log(sum(exp(z))) computed around the row maximum for stability.
LS_HD float row_logsumexp(const float* z, int classes, float max_value) {
  float sum = 0.0f;
  for (int k = 0; k < classes; ++k) sum += expf(z[k] - max_value);
  return max_value + logf(sum);
}

// Index of the largest logit (the first one on ties), the top-1 prediction.
LS_HD int row_argmax(const float* z, int classes) {
  int best = 0;
  for (int k = 1; k < classes; ++k)
    if (z[k] > z[best]) best = k;
  return best;
}

// The target probability of class k (is_label: k is the row's label). With
// e = 0 it is exactly 1 or 0, so unsmoothed gradients keep their bits.
LS_HD float smoothed_target(bool is_label, float smoothing, int classes) {
  return (is_label ? 1.0f - smoothing : 0.0f) + smoothing / static_cast<float>(classes);
}

// The loss of one row from its logsumexp, its label's logit and (only used
// when smoothing) the mean of its logits.
LS_HD double row_loss(float logsumexp, float z_label, float z_mean, float smoothing) {
  if (smoothing == 0.0f) return static_cast<double>(logsumexp - z_label);
  return static_cast<double>(logsumexp) - (1.0 - static_cast<double>(smoothing)) * static_cast<double>(z_label) -
         static_cast<double>(smoothing) * static_cast<double>(z_mean);
}

// d(scale * loss)/dz[k] for one row, from the row's logsumexp and class k's target.
LS_HD float cross_entropy_grad(float z, float logsumexp, float target, float scale) {
  return scale * (expf(z - logsumexp) - target);
}

// A mixed batch's labels are rows of three int32: label a, label b and the
// bits of lam as a float (a [N, 3] i32 tensor), so they travel, are sliced
// over replicas and are staged as the plain [N] labels are.
inline constexpr int kMixedTargetWidth = 3;

struct MixedTarget {
  int32_t a, b;
  float lam;
};

LS_HD MixedTarget mixed_target_of(const int32_t* row) {
  return MixedTarget{row[0], row[1], bits_float(static_cast<uint32_t>(row[2]))};
}

// Class k's target in a mixed row: lam smooth(onehot(a)) + (1 - lam)
// smooth(onehot(b)). With lam = 1 it is smoothed_target(is_a) exactly.
LS_HD float mixed_target(bool is_a, bool is_b, float lam, float smoothing, int classes) {
  return lam * smoothed_target(is_a, smoothing, classes) + (1.0f - lam) * smoothed_target(is_b, smoothing, classes);
}

// A mixed row's loss, -sum_k target_k log softmax(z)_k: logsumexp(z) - (1 - e)
// (lam z[a] + (1 - lam) z[b]) - e mean(z), since the targets sum to 1.
LS_HD double mixed_row_loss(float logsumexp, float z_a, float z_b, float z_mean, float lam, float smoothing) {
  const double l = static_cast<double>(lam);
  const double hit = l * static_cast<double>(z_a) + (1.0 - l) * static_cast<double>(z_b);
  return static_cast<double>(logsumexp) - (1.0 - static_cast<double>(smoothing)) * hit -
         static_cast<double>(smoothing) * static_cast<double>(z_mean);
}

}  // namespace lockstep
