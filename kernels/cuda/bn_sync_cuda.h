#pragma once
// CUDA launchers of synchronised batch norm's per-channel steps
// (kernels/bn_sync.h), one thread per channel, on `stream`.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lockstep::cuda {

void bn_sync_pack_means(cudaStream_t stream, const float* mean, int64_t count, int64_t channels, double* packed);
void bn_sync_pack_vars(cudaStream_t stream, const float* mean, const float* var, int64_t count, int64_t channels,
                       double* packed);
void bn_sync_finish_stats(cudaStream_t stream, const double* packed, int64_t channels, float eps, float* saved_mean,
                          float* saved_inv_std);
void bn_sync_param_grads(cudaStream_t stream, const double* packed, int64_t channels, float* dgamma, float* dbeta);
void bn_sync_grad_means(cudaStream_t stream, const double* packed, int64_t channels, float* mean_dy,
                        float* mean_dy_xhat);

}  // namespace lockstep::cuda
