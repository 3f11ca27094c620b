#pragma once
// Synchronised batch norm (--sync-bn): the statistics of a BN layer over the
// values of every replica, all-reduced in the forward pass before
// normalising, so N replicas normalise exactly as one device would at any
// depth. Written once for the CPU loops and the CUDA kernels. Replica r has
// M_r values per channel with mean m_r and biased variance v_r; one buffer of
// doubles per layer (C channels) holds, in turn,
//   [0, C)          M_r * m_r,  and at [C] M_r        -> summed: M m and M
//   [C+1, 2C+1)     M_r * (v_r + (m_r - m)^2)         -> summed: M v
//   [2C+1, 3C+1)    sum of dy over the replica's values       \ summed in backward:
//   [3C+1, 4C+1)    sum of dy * xhat over them                /  the global means
// (the exact combination of docs/architecture.md, "Batch-norm statistics
// across replicas", weighted by counts).
#include <stdint.h>

#include "kernels/bn_math.h"
#include "kernels/host_device.h"

namespace lockstep {

LS_HD int64_t bn_sync_doubles(int64_t channels) { return 4 * channels + 1; }

LS_HD void bn_sync_pack_mean(const float* mean, int64_t count, int64_t c, int64_t channels, double* p) {
  p[c] = static_cast<double>(count) * static_cast<double>(mean[c]);
  if (c == 0) p[channels] = static_cast<double>(count);
}

// After the first sum: the combined mean of channel c.
LS_HD double bn_sync_mean(const double* p, int64_t c, int64_t channels) {
  return p[channels] > 0.0 ? p[c] / p[channels] : 0.0;
}

LS_HD void bn_sync_pack_var(const float* mean, const float* var, int64_t count, int64_t c, int64_t channels,
                            double* p) {
  const double d = static_cast<double>(mean[c]) - bn_sync_mean(p, c, channels);
  p[channels + 1 + c] = static_cast<double>(count) * (static_cast<double>(var[c]) + d * d);
}

// After the second sum: the mean and 1/sqrt(var + eps) every replica normalises with.
LS_HD void bn_sync_finish_stats(const double* p, int64_t c, int64_t channels, float eps, float* saved_mean,
                                float* saved_inv_std) {
  const double total = p[channels];
  const float var = total > 0.0 ? static_cast<float>(p[channels + 1 + c] / total) : 0.0f;
  saved_mean[c] = static_cast<float>(bn_sync_mean(p, c, channels));
  saved_inv_std[c] = bn_inv_std(var, eps);
}

LS_HD double* bn_sync_grad_sums(double* p, int64_t channels) { return p + 2 * channels + 1; }

// Before the backward sum: this replica's dbeta = sum(dy) and dgamma = sum(dy * xhat).
LS_HD void bn_sync_param_grads(const double* p, int64_t c, int64_t channels, float* dgamma, float* dbeta) {
  const double* sums = p + 2 * channels + 1;
  dbeta[c] = static_cast<float>(sums[c]);
  dgamma[c] = static_cast<float>(sums[channels + c]);
}

// After the backward sum: mean(dy) and mean(dy * xhat) over all replicas' values.
LS_HD void bn_sync_grad_means(const double* p, int64_t c, int64_t channels, float* mean_dy, float* mean_dy_xhat) {
  const double total = p[channels];
  const double* sums = p + 2 * channels + 1;
  mean_dy[c] = total > 0.0 ? static_cast<float>(sums[c] / total) : 0.0f;
  mean_dy_xhat[c] = total > 0.0 ? static_cast<float>(sums[channels + c] / total) : 0.0f;
}

}  // namespace lockstep
