#pragma once
// CPU loops of synchronised batch norm's per-channel steps (kernels/bn_sync.h)
// over one layer's buffer of bn_sync_doubles(channels) doubles.
#include <cstdint>

namespace lockstep::cpu {

void bn_sync_pack_means(const float* mean, int64_t count, int64_t channels, double* packed);
void bn_sync_pack_vars(const float* mean, const float* var, int64_t count, int64_t channels, double* packed);
void bn_sync_finish_stats(const double* packed, int64_t channels, float eps, float* saved_mean, float* saved_inv_std);
void bn_sync_param_grads(const double* packed, int64_t channels, float* dgamma, float* dbeta);
void bn_sync_grad_means(const double* packed, int64_t channels, float* mean_dy, float* mean_dy_xhat);

}  // namespace lockstep::cpu
