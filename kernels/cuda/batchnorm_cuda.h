#pragma once
// CUDA launchers of 2-D batch normalisation over [n, channels, spatial]
// images (spatial = H * W), from the math of kernels/bn_math.h, with the
// CPU reference's numerics (kernels/cpu/batchnorm_cpu.h): the statistics in
// two passes with double accumulators (the variance around the mean, so a
// channel whose mean is large against its spread keeps its variance), and
// the gradient sums in double. Reductions run in a fixed order, so the same
// inputs give the same bits on every run and every replica.
//
// Each channel's values are cut into `splits` runs, one block per (channel,
// run) in NCHW and per (tile of up to 32 channels, run of pixels) in NHWC,
// whose partial sums the next kernel adds in run order: enough blocks to fill
// the GPU even with few channels (kernels/cuda/channel_reduce.cuh).
//
// `format` (last, NCHW unless given) is how x, y, dy, dx and the shortcut lie
// (kernels/memory_format.h); the per-channel arrays are [channels] either
// way. NHWC sums in another fixed order than NCHW (a warp reads consecutive
// channels), so the two may differ in the last bit of a statistic.
//
// T is the stored type of the images (x, y, dy, dx, the shortcut and its
// gradient): float or bf16_bits (kernels/stored_type.h), read widened to
// float and written rounded to nearest; the per-channel arrays (gamma, beta,
// statistics, dgamma, dbeta) are FP32 whatever T is.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/memory_format.h"

namespace lockstep::cuda {

// Device scratch (bytes) the statistics and gradient launchers need for this
// shape; the caller passes at least this much, 16-byte aligned.
size_t batchnorm_scratch_bytes(int64_t n, int64_t channels, int64_t spatial);

// Mean and biased variance per channel (written to mean/var and to
// saved_mean, with saved_inv_std = 1/sqrt(var + eps)), then
// y = gamma * (x - mean) * inv_std + beta. An empty batch gives mean = var = 0.
template <typename T>
void batchnorm_forward_train(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial,
                             float eps, const float* gamma, const float* beta, T* y, float* batch_mean,
                             float* batch_var, float* saved_mean, float* saved_inv_std, void* scratch,
                             MemoryFormat format = MemoryFormat::nchw);

// The two halves of batchnorm_forward_train, for synchronised batch norm,
// which replaces the saved statistics by those of all replicas between them.
template <typename T>
void batchnorm_statistics(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial, float eps,
                          float* batch_mean, float* batch_var, float* saved_mean, float* saved_inv_std, void* scratch,
                          MemoryFormat format = MemoryFormat::nchw);
template <typename T>
void batchnorm_normalize(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial,
                         const float* mean, const float* inv_std, const float* gamma, const float* beta, T* y,
                         MemoryFormat format = MemoryFormat::nchw);

// Inference with the running statistics.
template <typename T>
void batchnorm_forward_eval(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial,
                            const float* running_mean, const float* running_var, float eps, const float* gamma,
                            const float* beta, T* y, MemoryFormat format = MemoryFormat::nchw);

// dgamma = sum(dy * xhat), dbeta = sum(dy) per channel (written); when dx is
// not null, the batch-statistics input gradient written (or added when
// `accumulate`).
template <typename T>
void batchnorm_backward(cudaStream_t stream, const T* x, const T* dy, int64_t n, int64_t channels,
                        int64_t spatial, const float* saved_mean, const float* saved_inv_std, const float* gamma,
                        float* dgamma, float* dbeta, T* dx, bool accumulate, void* scratch,
                        MemoryFormat format = MemoryFormat::nchw);

// The halves of batchnorm_backward for synchronised batch norm: the
// per-channel sums of dy and dy * xhat in double (scratch as for backward),
// then the input gradient from mean(dy) and mean(dy * xhat) over all replicas.
template <typename T>
void batchnorm_gradient_sums(cudaStream_t stream, const T* x, const T* dy, int64_t n, int64_t channels,
                             int64_t spatial, const float* mean, const float* inv_std, double* sum_dy,
                             double* sum_dy_xhat, void* scratch, MemoryFormat format = MemoryFormat::nchw);
template <typename T>
void batchnorm_input_gradient(cudaStream_t stream, const T* x, const T* dy, int64_t n, int64_t channels,
                              int64_t spatial, const float* mean, const float* inv_std, const float* gamma,
                              const float* mean_dy, const float* mean_dy_xhat, T* dx, bool accumulate,
                              MemoryFormat format = MemoryFormat::nchw);

// Batch norm followed by ReLU, fused, as kernels/cpu/batchnorm_cpu.h's twins:
// y = max(gamma * (x - mean) * inv_std + beta, 0) in the one normalising pass
// (after batchnorm_statistics), and the backward of both from that y with
// the ReLU's gradient formed as dy is read: two passes over the tensors
// where ReLU backward then batch-norm backward make three, and no
// intermediate gradient stored. Equal to the unfused sequence bit for bit.
template <typename T>
void batchnorm_relu_normalize(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial,
                              const float* mean, const float* inv_std, const float* gamma, const float* beta,
                              T* y, MemoryFormat format = MemoryFormat::nchw);
template <typename T>
void batchnorm_relu_backward(cudaStream_t stream, const T* x, const T* y, const T* dy, int64_t n,
                             int64_t channels, int64_t spatial, const float* saved_mean, const float* saved_inv_std,
                             const float* gamma, float* dgamma, float* dbeta, T* dx, bool accumulate,
                             void* scratch, MemoryFormat format = MemoryFormat::nchw);

// Batch norm, residual add and ReLU fused, as kernels/cpu/batchnorm_cpu.h's
// twins: y = max(bn(x) + shortcut, 0) in the normalising pass (after
// batchnorm_statistics); backward from that y, the masked gradient stored as
// the shortcut's (written or added; dshortcut null: not needed) by the
// gradient-sums pass, which the input-gradient pass then reads back when it
// was written. Equal to batch norm, add and ReLU unfused bit for bit.
template <typename T>
void batchnorm_add_relu_normalize(cudaStream_t stream, const T* x, const T* shortcut, int64_t n,
                                  int64_t channels, int64_t spatial, const float* mean, const float* inv_std,
                                  const float* gamma, const float* beta, T* y,
                                  MemoryFormat format = MemoryFormat::nchw);
template <typename T>
void batchnorm_add_relu_backward(cudaStream_t stream, const T* x, const T* y, const T* dy, int64_t n,
                                 int64_t channels, int64_t spatial, const float* saved_mean,
                                 const float* saved_inv_std, const float* gamma, float* dgamma, float* dbeta,
                                 T* dx, bool accumulate, T* dshortcut, bool accumulate_shortcut,
                                 void* scratch, MemoryFormat format = MemoryFormat::nchw);

// running = (1 - momentum) * running + momentum * value, for the mean and the
// unbiased variance (bn_unbiased_var).
void batchnorm_update_running(cudaStream_t stream, float* running_mean, float* running_var, const float* mean,
                              const float* biased_var, int64_t channels, int64_t values_per_channel, float momentum);

}  // namespace lockstep::cuda
