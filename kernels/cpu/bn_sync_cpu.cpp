#include "kernels/cpu/bn_sync_cpu.h"

#include "kernels/bn_sync.h"

namespace lockstep::cpu {

void bn_sync_pack_means(const float* mean, int64_t count, int64_t channels, double* packed) {
  for (int64_t c = 0; c < channels; ++c) lockstep::bn_sync_pack_mean(mean, count, c, channels, packed);
}

void bn_sync_pack_vars(const float* mean, const float* var, int64_t count, int64_t channels, double* packed) {
  for (int64_t c = 0; c < channels; ++c) lockstep::bn_sync_pack_var(mean, var, count, c, channels, packed);
}

void bn_sync_finish_stats(const double* packed, int64_t channels, float eps, float* saved_mean, float* saved_inv_std) {
  for (int64_t c = 0; c < channels; ++c) lockstep::bn_sync_finish_stats(packed, c, channels, eps, saved_mean, saved_inv_std);
}

void bn_sync_param_grads(const double* packed, int64_t channels, float* dgamma, float* dbeta) {
  for (int64_t c = 0; c < channels; ++c) lockstep::bn_sync_param_grads(packed, c, channels, dgamma, dbeta);
}

void bn_sync_grad_means(const double* packed, int64_t channels, float* mean_dy, float* mean_dy_xhat) {
  for (int64_t c = 0; c < channels; ++c) lockstep::bn_sync_grad_means(packed, c, channels, mean_dy, mean_dy_xhat);
}

}  // namespace lockstep::cpu
