#pragma once
// 2-D batch normalisation on tensors of one device (images [N, C, H, W], every
// per-channel tensor [C]), dispatched by the context's device; the images of
// one call all NCHW or all NHWC (kernels/memory_format.h; the CPU computes
// NHWC on NCHW copies, ops/cpu_nchw.h); and the
// running-statistics update and exact statistics combination that the replica
// manager applies after each step.
//
// The images of a call (x, y, dy, dx, the shortcut and its gradient) are all
// f32 or, on a GPU, all bf16 storage (math, sums and statistics in FP32 or
// double, each stored value rounded once); gamma, beta, the batch, saved and
// running statistics and dgamma, dbeta are f32 always.
#include <cstdint>
#include <vector>

#include "runtime/context.h"
#include "runtime/model.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// Training forward: the batch mean and biased variance of each channel over
// N*H*W (two passes, the variance around the mean), then
// y = gamma * (x - mean) / sqrt(var + eps) + beta. Writes batch_mean and
// batch_var (for the replica manager) and saved_mean and saved_inv_std, the
// only ones batchnorm_backward reads, so the manager may combine the batch
// statistics in place while backward still runs.
void batchnorm_forward_train(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                             Tensor& y, Tensor& batch_mean, Tensor& batch_var, Tensor& saved_mean,
                             Tensor& saved_inv_std);

// Inference forward with the running statistics.
void batchnorm_forward_eval(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                            const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y);

// Backward of batchnorm_forward_train, from its saved_mean and saved_inv_std:
// writes dgamma = sum(dy * xhat) and dbeta = sum(dy) per channel and, when dx
// is not null, writes (adds, when accumulate) the full batch-statistics
// gradient dL/dx.
void batchnorm_backward(Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                        const Tensor& saved_mean, const Tensor& saved_inv_std, Tensor& dgamma, Tensor& dbeta,
                        Tensor* dx, bool accumulate);

// Batch norm + ReLU fused (kernels/cpu/batchnorm_cpu.h): the training
// forward above with y = max(bn(x), 0) written in its one normalising pass,
// and the backward of both from that y (the ReLU's mask), arguments as
// batchnorm_backward's. Equal bit for bit to batchnorm_forward_train then
// relu_forward, and relu_backward then batchnorm_backward.
void batchnorm_relu_forward_train(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                  Tensor& y, Tensor& batch_mean, Tensor& batch_var, Tensor& saved_mean,
                                  Tensor& saved_inv_std);
void batchnorm_relu_backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& gamma,
                             const Tensor& saved_mean, const Tensor& saved_inv_std, Tensor& dgamma, Tensor& dbeta,
                             Tensor* dx, bool accumulate);

// Batch norm, residual add and ReLU fused (the tail of a residual block):
// the training forward with y = max(bn(x) + shortcut, 0) in its one
// normalising pass, and the backward from that y, which writes (or adds, per
// accumulate_shortcut) the shortcut's gradient, the ReLU-masked dy, to
// dshortcut (null: not needed) and runs the batch-norm backward from it
// (dx as batchnorm_backward's; dx and dshortcut separate buffers). Equal bit
// for bit to batchnorm_forward_train, add, relu_forward, and relu_backward,
// the add's copy to the shortcut, batchnorm_backward.
void batchnorm_add_relu_forward_train(Context& ctx, const Tensor& x, const Tensor& shortcut, const Tensor& gamma,
                                      const Tensor& beta, float eps, Tensor& y, Tensor& batch_mean,
                                      Tensor& batch_var, Tensor& saved_mean, Tensor& saved_inv_std);
void batchnorm_add_relu_backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                                 const Tensor& gamma, const Tensor& saved_mean, const Tensor& saved_inv_std,
                                 Tensor& dgamma, Tensor& dbeta, Tensor* dx, bool accumulate, Tensor* dshortcut,
                                 bool accumulate_shortcut);

// running = (1 - s.momentum) * running + s.momentum * value, for the mean and
// for the UNBIASED variance biased_var * M/(M-1), M = values_per_channel (the
// values behind the statistics over all replicas, B*H*W). With M <= 1 the
// unbiased variance is undefined (0/0), so the biased one is used rather than
// letting inf or NaN into running_var. mean and biased_var are [C] on ctx's
// device, like s.running_mean and s.running_var.
void batchnorm_update_running(Context& ctx, BatchNormState& s, const Tensor& mean, const Tensor& biased_var,
                              int64_t values_per_channel);

// One replica's per-channel batch statistics, copied to the host.
struct HostBatchStats {
  std::vector<float> mean, var;  // [C]; var is the biased variance
};

// Exact combination of per-replica statistics (in double on the host): with
// weights w_r = n_r / B (non-negative, summing to 1),
//   m = sum w_r m_r,  v = sum w_r (v_r + (m_r - m)^2),
// the mean and biased variance of all the replicas' values together.
HostBatchStats combine_batch_stats(const std::vector<double>& weights, const std::vector<HostBatchStats>& replicas);

}  // namespace lockstep::ops
