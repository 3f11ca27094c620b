// Synchronised batch norm's per-channel steps: one thread per channel, the
// same function per value as the CPU loop (kernels/bn_sync.h).
#include "kernels/cuda/bn_sync_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/bn_sync.h"
#include "kernels/cuda/launch.cuh"

namespace lockstep::cuda {
namespace {

constexpr int kThreads = 128;

unsigned blocks_for(int64_t channels) { return static_cast<unsigned>((channels + kThreads - 1) / kThreads); }

__device__ __forceinline__ int64_t channel_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__global__ void pack_means_kernel(const float* mean, int64_t count, int64_t channels, double* packed) {
  const int64_t c = channel_index();
  if (c < channels) lockstep::bn_sync_pack_mean(mean, count, c, channels, packed);
}

__global__ void pack_vars_kernel(const float* mean, const float* var, int64_t count, int64_t channels, double* packed) {
  const int64_t c = channel_index();
  if (c < channels) lockstep::bn_sync_pack_var(mean, var, count, c, channels, packed);
}

__global__ void finish_stats_kernel(const double* packed, int64_t channels, float eps, float* saved_mean,
                                    float* saved_inv_std) {
  const int64_t c = channel_index();
  if (c < channels) lockstep::bn_sync_finish_stats(packed, c, channels, eps, saved_mean, saved_inv_std);
}

__global__ void param_grads_kernel(const double* packed, int64_t channels, float* dgamma, float* dbeta) {
  const int64_t c = channel_index();
  if (c < channels) lockstep::bn_sync_param_grads(packed, c, channels, dgamma, dbeta);
}

__global__ void grad_means_kernel(const double* packed, int64_t channels, float* mean_dy, float* mean_dy_xhat) {
  const int64_t c = channel_index();
  if (c < channels) lockstep::bn_sync_grad_means(packed, c, channels, mean_dy, mean_dy_xhat);
}

}  // namespace

void bn_sync_pack_means(cudaStream_t stream, const float* mean, int64_t count, int64_t channels, double* packed) {
  if (channels <= 0) return;
  LS_LAUNCH(blocks_for(channels), kThreads, 0, stream, pack_means_kernel)(mean, count, channels, packed);
  LS_CUDA_CHECK_LAUNCH("bn_sync_pack_means");
}

void bn_sync_pack_vars(cudaStream_t stream, const float* mean, const float* var, int64_t count, int64_t channels,
                       double* packed) {
  if (channels <= 0) return;
  LS_LAUNCH(blocks_for(channels), kThreads, 0, stream, pack_vars_kernel)(mean, var, count, channels, packed);
  LS_CUDA_CHECK_LAUNCH("bn_sync_pack_vars");
}

void bn_sync_finish_stats(cudaStream_t stream, const double* packed, int64_t channels, float eps, float* saved_mean,
                          float* saved_inv_std) {
  if (channels <= 0) return;
  LS_LAUNCH(blocks_for(channels), kThreads, 0, stream, finish_stats_kernel)(packed, channels, eps, saved_mean,
                                                                       saved_inv_std);
  LS_CUDA_CHECK_LAUNCH("bn_sync_finish_stats");
}

void bn_sync_param_grads(cudaStream_t stream, const double* packed, int64_t channels, float* dgamma, float* dbeta) {
  if (channels <= 0) return;
  LS_LAUNCH(blocks_for(channels), kThreads, 0, stream, param_grads_kernel)(packed, channels, dgamma, dbeta);
  LS_CUDA_CHECK_LAUNCH("bn_sync_param_grads");
}

void bn_sync_grad_means(cudaStream_t stream, const double* packed, int64_t channels, float* mean_dy,
                        float* mean_dy_xhat) {
  if (channels <= 0) return;
  LS_LAUNCH(blocks_for(channels), kThreads, 0, stream, grad_means_kernel)(packed, channels, mean_dy, mean_dy_xhat);
  LS_CUDA_CHECK_LAUNCH("bn_sync_grad_means");
}

}  // namespace lockstep::cuda
