#pragma once
// CPU reference of 2-D batch normalisation. Images are [n, channels, spatial]
// (spatial = H * W) and every per-channel array has `channels` entries. The
// images may lie channels-last (`format` nhwc: [n, spatial, channels]); the
// sums then run in the NCHW loops' order, so either format gives the same
// bits.
#include <cstdint>

#include "kernels/memory_format.h"

namespace lockstep::cpu {

// Per-channel mean and biased variance over the n * spatial values, with
// double accumulators, and inv_std = 1 / sqrt(var + eps). Each sample's
// values are summed, then their squared distances from that sample's mean
// (while they are in cache), and the samples joined by Chan et al.'s update,
// a sum of non-negative terms: the variance around the mean without a second
// pass over the whole batch. An empty batch gives mean = var = 0. (A one-pass
// shifted sum was tried: it moved the statistics of near-constant channels
// enough that resnet50's CPU and GPU steps no longer agreed.)
void batchnorm_batch_stats(const float* x, int64_t n, int64_t channels, int64_t spatial, float eps, float* mean,
                           float* var, float* inv_std, MemoryFormat format = MemoryFormat::nchw);

// y = gamma * (x - mean) * inv_std + beta.
void batchnorm_normalize(const float* x, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                         const float* inv_std, const float* gamma, const float* beta, float* y,
                         MemoryFormat format = MemoryFormat::nchw);

// Inference: the same with the running statistics.
void batchnorm_forward_eval(const float* x, int64_t n, int64_t channels, int64_t spatial, const float* running_mean,
                            const float* running_var, float eps, const float* gamma, const float* beta, float* y,
                            MemoryFormat format = MemoryFormat::nchw);

// Backward of the training forward (batch statistics): writes dgamma =
// sum(dy * xhat) and dbeta = sum(dy); when dx is not null, writes (or adds,
// when accumulate) the input gradient, which includes the paths through the
// batch mean and variance.
void batchnorm_backward(const float* x, const float* dy, int64_t n, int64_t channels, int64_t spatial,
                        const float* mean, const float* inv_std, const float* gamma, float* dgamma, float* dbeta,
                        float* dx, bool accumulate, MemoryFormat format = MemoryFormat::nchw);

// The two halves of batchnorm_backward, for synchronised batch norm, which
// sums over all replicas between them: the per-channel sums of dy and of
// dy * xhat (in double), then the input gradient from mean(dy) and
// mean(dy * xhat) over however many values those means cover.
void batchnorm_gradient_sums(const float* x, const float* dy, int64_t n, int64_t channels, int64_t spatial,
                             const float* mean, const float* inv_std, double* sum_dy, double* sum_dy_xhat,
                             MemoryFormat format = MemoryFormat::nchw);
void batchnorm_input_gradient(const float* x, const float* dy, int64_t n, int64_t channels, int64_t spatial,
                              const float* mean, const float* inv_std, const float* gamma, const float* mean_dy,
                              const float* mean_dy_xhat, float* dx, bool accumulate,
                              MemoryFormat format = MemoryFormat::nchw);

// Batch norm followed by ReLU, fused (one pass each way where the unfused
// sequence makes two): y = max(gamma * (x - mean) * inv_std + beta, 0), as
// batchnorm_normalize then relu; and the backward of both from that y, the
// ReLU's gradient (dy where y > 0, else 0) formed as it is read and never
// stored, otherwise as batchnorm_backward. Same values, same order: the
// results equal the unfused sequence's bit for bit.
void batchnorm_relu_normalize(const float* x, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                              const float* inv_std, const float* gamma, const float* beta, float* y,
                              MemoryFormat format = MemoryFormat::nchw);
void batchnorm_relu_backward(const float* x, const float* y, const float* dy, int64_t n, int64_t channels,
                             int64_t spatial, const float* mean, const float* inv_std, const float* gamma,
                             float* dgamma, float* dbeta, float* dx, bool accumulate,
                             MemoryFormat format = MemoryFormat::nchw);

// Batch norm, residual add and ReLU fused, the tail of a residual block:
// y = max(gamma * (x - mean) * inv_std + beta + shortcut, 0), as
// batchnorm_normalize, add, relu. Backward from that y: the ReLU's gradient g
// (dy where y > 0, else 0) is the shortcut's gradient, written or added
// (accumulate_shortcut) to dshortcut (null: not needed) in the gradient-sums
// pass, and the batch-norm backward runs from g, reading dshortcut back when
// it was written (it then holds g exactly). The results equal the unfused
// sequence's bit for bit. dx and dshortcut must not overlap.
void batchnorm_add_relu_normalize(const float* x, const float* shortcut, int64_t n, int64_t channels, int64_t spatial,
                                  const float* mean, const float* inv_std, const float* gamma, const float* beta,
                                  float* y, MemoryFormat format = MemoryFormat::nchw);
void batchnorm_add_relu_backward(const float* x, const float* y, const float* dy, int64_t n, int64_t channels,
                                 int64_t spatial, const float* mean, const float* inv_std, const float* gamma,
                                 float* dgamma, float* dbeta, float* dx, bool accumulate, float* dshortcut,
                                 bool accumulate_shortcut, MemoryFormat format = MemoryFormat::nchw);

// running = (1 - momentum) * running + momentum * value, the variance made
// unbiased with values_per_channel (see bn_unbiased_var).
void batchnorm_update_running(float* running_mean, float* running_var, const float* mean, const float* biased_var,
                              int64_t channels, int64_t values_per_channel, float momentum);

}  // namespace lockstep::cpu
