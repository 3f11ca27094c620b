#include "ops/batchnorm.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "kernels/bn_math.h"
#include "kernels/cpu/batchnorm_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "runtime/cuda/cuda_context.h"
#include "kernels/cuda/batchnorm_cuda.h"
#endif

namespace lockstep::ops {

namespace {

// Checks x is [N, C, H, W] on ctx's device and returns C.
int64_t check_images(const char* op, Context& ctx, const Tensor& x) {
  LS_CHECK(x.shape().rank() == 4, op, ": input must be [N, C, H, W], got ", x.shape().str());
  LS_CHECK(x.device() == ctx.device(), op, ": input on ", x.device().str(), ", context on ", ctx.device().str());
  return x.dim(1);
}

void check_like(const char* op, Context& ctx, const Tensor& x, const Tensor& t, const char* what) {
  LS_CHECK(t.shape() == x.shape(), op, ": ", what, " ", t.shape().str(), " for input ", x.shape().str());
  LS_CHECK(t.device() == ctx.device(), op, ": ", what, " on ", t.device().str(), ", context on ", ctx.device().str());
}

void check_channels(const char* op, Context& ctx, const Tensor& t, int64_t channels, const char* what) {
  LS_CHECK(t.shape().rank() == 1 && t.dim(0) == channels, op, ": ", what, " must be [", channels, "], got ",
           t.shape().str());
  LS_CHECK(t.device() == ctx.device(), op, ": ", what, " on ", t.device().str(), ", context on ", ctx.device().str());
}

}  // namespace

void batchnorm_forward_train(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                             Tensor& y, Tensor& batch_mean, Tensor& batch_var, Tensor& saved_mean,
                             Tensor& saved_inv_std) {
  const char* op = "batchnorm_forward_train";
  const int64_t c = check_images(op, ctx, x);
  check_like(op, ctx, x, y, "output");
  check_channels(op, ctx, gamma, c, "gamma");
  check_channels(op, ctx, beta, c, "beta");
  check_channels(op, ctx, batch_mean, c, "batch mean");
  check_channels(op, ctx, batch_var, c, "batch variance");
  check_channels(op, ctx, saved_mean, c, "saved mean");
  check_channels(op, ctx, saved_inv_std, c, "saved inverse std");
  const int64_t n = x.dim(0), spatial = x.dim(2) * x.dim(3);
  if (ctx.device().is_cpu()) {
    cpu::batchnorm_batch_stats(x.data(), n, c, spatial, eps, saved_mean.data(), batch_var.data(),
                               saved_inv_std.data());
    std::copy_n(saved_mean.data(), c, batch_mean.data());
    cpu::batchnorm_normalize(x.data(), n, c, spatial, saved_mean.data(), saved_inv_std.data(), gamma.data(),
                             beta.data(), y.data());
    return;
  }
#if LOCKSTEP_WITH_CUDA
  void* scratch = ctx.workspace(cuda::batchnorm_scratch_bytes(n, c, spatial));
  cuda::batchnorm_forward_train(ctx.cuda()->compute_stream, x.data(), n, c, spatial, eps, gamma.data(), beta.data(),
                                y.data(), batch_mean.data(), batch_var.data(), saved_mean.data(), saved_inv_std.data(),
                                scratch);
#else
  LS_FAIL(op, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void batchnorm_forward_eval(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                            const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  const char* op = "batchnorm_forward_eval";
  const int64_t c = check_images(op, ctx, x);
  check_like(op, ctx, x, y, "output");
  check_channels(op, ctx, gamma, c, "gamma");
  check_channels(op, ctx, beta, c, "beta");
  check_channels(op, ctx, running_mean, c, "running mean");
  check_channels(op, ctx, running_var, c, "running variance");
  if (ctx.device().is_cpu())
    return cpu::batchnorm_forward_eval(x.data(), x.dim(0), c, x.dim(2) * x.dim(3), running_mean.data(),
                                       running_var.data(), eps, gamma.data(), beta.data(), y.data());
#if LOCKSTEP_WITH_CUDA
  cuda::batchnorm_forward_eval(ctx.cuda()->compute_stream, x.data(), x.dim(0), c, x.dim(2) * x.dim(3),
                               running_mean.data(), running_var.data(), eps, gamma.data(), beta.data(), y.data());
#else
  LS_FAIL(op, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void batchnorm_backward(Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                        const Tensor& saved_mean, const Tensor& saved_inv_std, Tensor& dgamma, Tensor& dbeta,
                        Tensor* dx, bool accumulate) {
  const char* op = "batchnorm_backward";
  const int64_t c = check_images(op, ctx, x);
  check_like(op, ctx, x, dy, "output gradient");
  if (dx) check_like(op, ctx, x, *dx, "input gradient");
  check_channels(op, ctx, gamma, c, "gamma");
  check_channels(op, ctx, saved_mean, c, "saved mean");
  check_channels(op, ctx, saved_inv_std, c, "saved inverse std");
  check_channels(op, ctx, dgamma, c, "gamma gradient");
  check_channels(op, ctx, dbeta, c, "beta gradient");
  if (ctx.device().is_cpu())
    return cpu::batchnorm_backward(x.data(), dy.data(), x.dim(0), c, x.dim(2) * x.dim(3), saved_mean.data(),
                                   saved_inv_std.data(), gamma.data(), dgamma.data(), dbeta.data(),
                                   dx ? dx->data() : nullptr, accumulate);
#if LOCKSTEP_WITH_CUDA
  const int64_t n = x.dim(0), spatial = x.dim(2) * x.dim(3);
  void* scratch = ctx.workspace(cuda::batchnorm_scratch_bytes(n, c, spatial));
  cuda::batchnorm_backward(ctx.cuda()->compute_stream, x.data(), dy.data(), n, c, spatial, saved_mean.data(),
                           saved_inv_std.data(), gamma.data(), dgamma.data(), dbeta.data(), dx ? dx->data() : nullptr,
                           accumulate, scratch);
#else
  LS_FAIL(op, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void batchnorm_update_running(Context& ctx, BatchNormState& s, const Tensor& mean, const Tensor& biased_var,
                              int64_t values_per_channel) {
  const char* op = "batchnorm_update_running";
  LS_CHECK(s.running_mean.defined() && s.running_var.defined(), op, " of '", s.name,
           "': running statistics are not bound");
  const int64_t c = s.running_mean.numel();
  LS_CHECK(values_per_channel >= 0, op, " of '", s.name, "': ", values_per_channel, " values per channel");
  check_channels(op, ctx, s.running_mean, c, "running mean");
  check_channels(op, ctx, s.running_var, c, "running variance");
  check_channels(op, ctx, mean, c, "mean");
  check_channels(op, ctx, biased_var, c, "variance");
  if (ctx.device().is_cpu())
    return cpu::batchnorm_update_running(s.running_mean.data(), s.running_var.data(), mean.data(), biased_var.data(),
                                         c, values_per_channel, s.momentum);
#if LOCKSTEP_WITH_CUDA
  cuda::batchnorm_update_running(ctx.cuda()->compute_stream, s.running_mean.data(), s.running_var.data(), mean.data(),
                                 biased_var.data(), c, values_per_channel, s.momentum);
#else
  LS_FAIL(op, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

HostBatchStats combine_batch_stats(const std::vector<double>& weights, const std::vector<HostBatchStats>& replicas) {
  const char* op = "combine_batch_stats";
  LS_CHECK(!replicas.empty() && weights.size() == replicas.size(), op, ": ", weights.size(), " weights for ",
           replicas.size(), " replicas");
  const size_t channels = replicas[0].mean.size();
  double weight_sum = 0.0;
  for (size_t r = 0; r < replicas.size(); ++r) {
    LS_CHECK(replicas[r].mean.size() == channels && replicas[r].var.size() == channels, op, ": replica ", r,
             " has ", replicas[r].mean.size(), " means and ", replicas[r].var.size(), " variances, replica 0 has ",
             channels, " channels");
    LS_CHECK(weights[r] >= 0.0, op, ": weight ", weights[r], " of replica ", r, " is negative");
    weight_sum += weights[r];
  }
  LS_CHECK(std::abs(weight_sum - 1.0) <= 1e-6, op, ": the weights sum to ", weight_sum, ", not 1");

  HostBatchStats out{std::vector<float>(channels), std::vector<float>(channels)};
  for (size_t c = 0; c < channels; ++c) {
    double mean = 0.0;
    for (size_t r = 0; r < replicas.size(); ++r) mean += bn_mean_term<double>(weights[r], replicas[r].mean[c]);
    double var = 0.0;
    for (size_t r = 0; r < replicas.size(); ++r)
      var += bn_var_term<double>(weights[r], replicas[r].mean[c], replicas[r].var[c], mean);
    out.mean[c] = static_cast<float>(mean);
    out.var[c] = static_cast<float>(var);
  }
  return out;
}

}  // namespace lockstep::ops
