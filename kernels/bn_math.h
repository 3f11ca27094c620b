#pragma once
// Batch-norm math shared by the CPU loops and the CUDA kernels: normalising one
// value, the input gradient of one value, the running-statistics update and the
// exact combination of per-replica statistics.
#include <math.h>
#include <stdint.h>

#include "kernels/host_device.h"

namespace lockstep {

LS_HD float bn_inv_std(float var, float eps) { return 1.0f / sqrtf(var + eps); }

// Batch statistics from one pass over a channel's `count` values: the sums of
// d = x - shift and d * d in double, `shift` one of the channel's own values.
// var = E[d^2] - E[d]^2 then cancels only (mean - shift)^2, so its relative
// error grows as 2^-53 * (mean - shift)^2 / var (times the summation's own
// growth): below float's 2^-24 while that one value lies within about 10^3
// standard deviations of the mean (3e-7 measured at 10^4).
// (The unshifted E[x^2] - mean^2 loses (mean / std)^2 in the same way, which
// is why it is never used.) A rounding below zero is clamped to zero.
struct BnMoments {
  double mean, var;
};
LS_HD BnMoments bn_shifted_moments(double sum_d, double sum_d2, double count, double shift) {
  if (count <= 0.0) return {0.0, 0.0};
  const double mean_d = sum_d / count;
  const double var = sum_d2 / count - mean_d * mean_d;
  return {shift + mean_d, var > 0.0 ? var : 0.0};
}

// y = gamma * (x - mean) / sqrt(var + eps) + beta, with inv_std = 1 / sqrt(var + eps).
LS_HD float bn_normalize(float x, float mean, float inv_std, float gamma, float beta) {
  return gamma * ((x - mean) * inv_std) + beta;
}

// dL/dx of one value when the mean and variance come from the batch itself:
// dx = gamma * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)), the means
// taken over the M values of the channel and xhat = (x - mean) * inv_std.
LS_HD float bn_input_grad(float dy, float xhat, float gamma, float inv_std, float mean_dy, float mean_dy_xhat) {
  return gamma * inv_std * (dy - mean_dy - xhat * mean_dy_xhat);
}

// PyTorch's convention: momentum is the weight of the new value.
LS_HD float bn_running_update(float running, float value, float momentum) {
  return (1.0f - momentum) * running + momentum * value;
}

// The unbiased variance v * M/(M-1) that running_var tracks (as in PyTorch).
// With M <= 1 it is undefined (0/0 for M = 1, and M = 0 saw nothing), so the
// biased value is kept: one such step must not put inf or NaN into
// running_var for good.
LS_HD float bn_unbiased_var(float biased_var, int64_t values_per_channel) {
  if (values_per_channel <= 1) return biased_var;
  return biased_var * (static_cast<float>(values_per_channel) / static_cast<float>(values_per_channel - 1));
}

// Exact combination of per-replica statistics, per channel. Replica r with
// weight w_r (its share n_r / B of the batch, the weights summing to 1), mean
// m_r and biased variance v_r contributes
//   bn_mean_term to  m = sum_r w_r m_r,               then
//   bn_var_term  to  v = sum_r w_r (v_r + (m_r - m)^2)
// (two sums, i.e. two all-reduces across GPUs). Unlike E[x^2] - m^2 this
// keeps its precision when the mean is large against the standard deviation.
template <typename T> LS_HD T bn_mean_term(T weight, T mean) { return weight * mean; }

template <typename T> LS_HD T bn_var_term(T weight, T mean, T biased_var, T combined_mean) {
  T deviation = mean - combined_mean;
  return weight * (biased_var + deviation * deviation);
}

}  // namespace lockstep
