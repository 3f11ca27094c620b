#include "ops/batchnorm.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "base/error.h"
#include "kernels/bn_math.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"
#include "kernels/cpu/batchnorm_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/batchnorm_cuda.h"
#endif

namespace lockstep::ops {

namespace {

// Checks the per-channel tensors (parameters, statistics and their
// gradients) are FP32, whatever the images are stored as.
void check_channel_f32(const char* op, std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  for (const auto& [what, t] : tensors) check_f32(op, what, *t);
}

// Checks x is [N, C, H, W] on ctx's device and returns C.
int64_t check_images(const char* op, Context& ctx, const Tensor& x) {
  LS_CHECK(x.shape().rank() == 4, op, ": input must be [N, C, H, W], got ", x.shape().str());
  LS_CHECK(x.device() == ctx.device(), op, ": input on ", x.device().str(), ", context on ", ctx.device().str());
  return x.dim(1);
}

// The training forward, plain or with the ReLU (and with a shortcut, the
// residual add before it) fused into its normalising pass.
void forward_train(const char* op, bool relu, Context& ctx, const Tensor& x, const Tensor* shortcut,
                   const Tensor& gamma, const Tensor& beta, float eps, Tensor& y, Tensor& batch_mean,
                   Tensor& batch_var, Tensor& saved_mean, Tensor& saved_inv_std) {
  const int64_t c = check_images(op, ctx, x);
  check_shape_and_device(op, ctx, "output", y, x.shape());
  if (shortcut) check_shape_and_device(op, ctx, "shortcut", *shortcut, x.shape());
  check_shape_and_device(op, ctx, "gamma", gamma, Shape{c});
  check_shape_and_device(op, ctx, "beta", beta, Shape{c});
  check_shape_and_device(op, ctx, "batch mean", batch_mean, Shape{c});
  check_shape_and_device(op, ctx, "batch variance", batch_var, Shape{c});
  check_shape_and_device(op, ctx, "saved mean", saved_mean, Shape{c});
  check_shape_and_device(op, ctx, "saved inverse std", saved_inv_std, Shape{c});
  check_channel_f32(op, {{"gamma", &gamma}, {"beta", &beta}, {"batch mean", &batch_mean},
                         {"batch variance", &batch_var}, {"saved mean", &saved_mean},
                         {"saved inverse std", &saved_inv_std}});
  [[maybe_unused]] const DType dtype = check_stored(op, ctx, {&x, &y, shortcut});
  const int64_t n = x.dim(0), spatial = x.dim(2) * x.dim(3);
  const MemoryFormat format = check_format(op, x, {&y, shortcut});
  dispatch(
      op, ctx,
      [&] {
        const float* xs = x.data();
        float* ys = y.data();
        cpu::batchnorm_batch_stats(xs, n, c, spatial, eps, saved_mean.data(), batch_var.data(),
                                   saved_inv_std.data(), format);
        std::copy_n(saved_mean.data(), c, batch_mean.data());
        if (shortcut)
          cpu::batchnorm_add_relu_normalize(xs, shortcut->data(), n, c, spatial, saved_mean.data(),
                                            saved_inv_std.data(), gamma.data(), beta.data(), ys, format);
        else
          (relu ? cpu::batchnorm_relu_normalize : cpu::batchnorm_normalize)(
              xs, n, c, spatial, saved_mean.data(), saved_inv_std.data(), gamma.data(), beta.data(), ys, format);
      },
      LS_CUDA_TWIN(gpu, {
        void* scratch = ctx.workspace(cuda::batchnorm_scratch_bytes(n, c, spatial));
        with_stored_type(dtype, [&](auto tag) {
          using T = decltype(tag);
          cuda::batchnorm_statistics(gpu.compute_stream, elems<T>(x), n, c, spatial, eps, batch_mean.data(),
                                     batch_var.data(), saved_mean.data(), saved_inv_std.data(), scratch, format);
          if (shortcut)
            cuda::batchnorm_add_relu_normalize(gpu.compute_stream, elems<T>(x), elems<T>(*shortcut), n, c, spatial,
                                               saved_mean.data(), saved_inv_std.data(), gamma.data(), beta.data(),
                                               elems<T>(y), format);
          else
            (relu ? cuda::batchnorm_relu_normalize<T> : cuda::batchnorm_normalize<T>)(
                gpu.compute_stream, elems<T>(x), n, c, spatial, saved_mean.data(), saved_inv_std.data(),
                gamma.data(), beta.data(), elems<T>(y), format);
        });
      }));
}

// The fused residual join's shortcut gradient: where it goes (null: not
// needed, or no join) and whether it is added there.
struct ShortcutGrad {
  Tensor* grad = nullptr;
  bool accumulate = false;
  bool joined = false;  // the backward of batch norm + add + ReLU
};

// The backward, plain (y null) or through the fused ReLU's output y (and the
// residual add before it, `shortcut.joined`).
void backward(const char* op, Context& ctx, const Tensor& x, const Tensor* y, const Tensor& dy, const Tensor& gamma,
              const Tensor& saved_mean, const Tensor& saved_inv_std, Tensor& dgamma, Tensor& dbeta, Tensor* dx,
              bool accumulate, ShortcutGrad shortcut = {}) {
  const int64_t c = check_images(op, ctx, x);
  check_shape_and_device(op, ctx, "output gradient", dy, x.shape());
  if (y) check_shape_and_device(op, ctx, "output", *y, x.shape());
  if (dx) check_shape_and_device(op, ctx, "input gradient", *dx, x.shape());
  Tensor* ds = shortcut.grad;
  if (ds) {
    check_shape_and_device(op, ctx, "shortcut gradient", *ds, x.shape());
    LS_CHECK(!dx || dx->raw() != ds->raw(), op, ": the input and shortcut gradients must be separate buffers");
  }
  check_shape_and_device(op, ctx, "gamma", gamma, Shape{c});
  check_shape_and_device(op, ctx, "saved mean", saved_mean, Shape{c});
  check_shape_and_device(op, ctx, "saved inverse std", saved_inv_std, Shape{c});
  check_shape_and_device(op, ctx, "gamma gradient", dgamma, Shape{c});
  check_shape_and_device(op, ctx, "beta gradient", dbeta, Shape{c});
  check_channel_f32(op, {{"gamma", &gamma}, {"saved mean", &saved_mean}, {"saved inverse std", &saved_inv_std},
                         {"gamma gradient", &dgamma}, {"beta gradient", &dbeta}});
  [[maybe_unused]] const DType dtype = check_stored(op, ctx, {&x, y, &dy, dx, ds});
  const int64_t n = x.dim(0), spatial = x.dim(2) * x.dim(3);
  const MemoryFormat format = check_format(op, x, {y, &dy, dx, ds});
  dispatch(op, ctx,
           [&] {
             const float *xs = x.data(), *dys = dy.data(), *ys = y ? y->data() : nullptr;
             float* dxs = dx ? dx->data() : nullptr;
             if (shortcut.joined)
               cpu::batchnorm_add_relu_backward(xs, ys, dys, n, c, spatial, saved_mean.data(), saved_inv_std.data(),
                                                gamma.data(), dgamma.data(), dbeta.data(), dxs, accumulate,
                                                ds ? ds->data() : nullptr, shortcut.accumulate, format);
             else if (y)
               cpu::batchnorm_relu_backward(xs, ys, dys, n, c, spatial, saved_mean.data(), saved_inv_std.data(),
                                            gamma.data(), dgamma.data(), dbeta.data(), dxs, accumulate, format);
             else
               cpu::batchnorm_backward(xs, dys, n, c, spatial, saved_mean.data(), saved_inv_std.data(), gamma.data(),
                                       dgamma.data(), dbeta.data(), dxs, accumulate, format);
           },
           LS_CUDA_TWIN(gpu, {
             void* scratch = ctx.workspace(cuda::batchnorm_scratch_bytes(n, c, spatial));
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               if (shortcut.joined)
                 cuda::batchnorm_add_relu_backward(gpu.compute_stream, elems<T>(x), elems<T>(*y), elems<T>(dy), n, c,
                                                   spatial, saved_mean.data(), saved_inv_std.data(), gamma.data(),
                                                   dgamma.data(), dbeta.data(), elems<T>(dx), accumulate,
                                                   elems<T>(ds), shortcut.accumulate, scratch, format);
               else if (y)
                 cuda::batchnorm_relu_backward(gpu.compute_stream, elems<T>(x), elems<T>(*y), elems<T>(dy), n, c,
                                               spatial, saved_mean.data(), saved_inv_std.data(), gamma.data(),
                                               dgamma.data(), dbeta.data(), elems<T>(dx), accumulate, scratch, format);
               else
                 cuda::batchnorm_backward(gpu.compute_stream, elems<T>(x), elems<T>(dy), n, c, spatial,
                                          saved_mean.data(), saved_inv_std.data(), gamma.data(), dgamma.data(),
                                          dbeta.data(), elems<T>(dx), accumulate, scratch, format);
             });
           }));
}

}  // namespace

void batchnorm_forward_train(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                             Tensor& y, Tensor& batch_mean, Tensor& batch_var, Tensor& saved_mean,
                             Tensor& saved_inv_std) {
  forward_train("batchnorm_forward_train", false, ctx, x, nullptr, gamma, beta, eps, y, batch_mean, batch_var,
                saved_mean, saved_inv_std);
}

void batchnorm_relu_forward_train(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                  Tensor& y, Tensor& batch_mean, Tensor& batch_var, Tensor& saved_mean,
                                  Tensor& saved_inv_std) {
  forward_train("batchnorm_relu_forward_train", true, ctx, x, nullptr, gamma, beta, eps, y, batch_mean, batch_var,
                saved_mean, saved_inv_std);
}

void batchnorm_forward_eval(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                            const Tensor& running_mean, const Tensor& running_var, float eps, Tensor& y) {
  const char* op = "batchnorm_forward_eval";
  const int64_t c = check_images(op, ctx, x);
  check_shape_and_device(op, ctx, "output", y, x.shape());
  check_shape_and_device(op, ctx, "gamma", gamma, Shape{c});
  check_shape_and_device(op, ctx, "beta", beta, Shape{c});
  check_shape_and_device(op, ctx, "running mean", running_mean, Shape{c});
  check_shape_and_device(op, ctx, "running variance", running_var, Shape{c});
  check_channel_f32(op, {{"gamma", &gamma}, {"beta", &beta}, {"running mean", &running_mean},
                         {"running variance", &running_var}});
  [[maybe_unused]] const DType dtype = check_stored(op, ctx, {&x, &y});
  const int64_t n = x.dim(0), spatial = x.dim(2) * x.dim(3);
  const MemoryFormat format = check_format(op, x, {&y});
  dispatch(op, ctx,
           [&] {
             cpu::batchnorm_forward_eval(x.data(), n, c, spatial, running_mean.data(), running_var.data(), eps,
                                         gamma.data(), beta.data(), y.data(), format);
           },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::batchnorm_forward_eval(gpu.compute_stream, elems<T>(x), n, c, spatial, running_mean.data(),
                                            running_var.data(), eps, gamma.data(), beta.data(), elems<T>(y), format);
             });
           }));
}

void batchnorm_backward(Context& ctx, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                        const Tensor& saved_mean, const Tensor& saved_inv_std, Tensor& dgamma, Tensor& dbeta,
                        Tensor* dx, bool accumulate) {
  backward("batchnorm_backward", ctx, x, nullptr, dy, gamma, saved_mean, saved_inv_std, dgamma, dbeta, dx,
           accumulate);
}

void batchnorm_relu_backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& gamma,
                             const Tensor& saved_mean, const Tensor& saved_inv_std, Tensor& dgamma, Tensor& dbeta,
                             Tensor* dx, bool accumulate) {
  backward("batchnorm_relu_backward", ctx, x, &y, dy, gamma, saved_mean, saved_inv_std, dgamma, dbeta, dx,
           accumulate);
}

void batchnorm_add_relu_forward_train(Context& ctx, const Tensor& x, const Tensor& shortcut, const Tensor& gamma,
                                      const Tensor& beta, float eps, Tensor& y, Tensor& batch_mean,
                                      Tensor& batch_var, Tensor& saved_mean, Tensor& saved_inv_std) {
  forward_train("batchnorm_add_relu_forward_train", true, ctx, x, &shortcut, gamma, beta, eps, y, batch_mean,
                batch_var, saved_mean, saved_inv_std);
}

void batchnorm_add_relu_backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                                 const Tensor& gamma, const Tensor& saved_mean, const Tensor& saved_inv_std,
                                 Tensor& dgamma, Tensor& dbeta, Tensor* dx, bool accumulate, Tensor* dshortcut,
                                 bool accumulate_shortcut) {
  backward("batchnorm_add_relu_backward", ctx, x, &y, dy, gamma, saved_mean, saved_inv_std, dgamma, dbeta, dx,
           accumulate, {dshortcut, accumulate_shortcut, true});
}

void batchnorm_update_running(Context& ctx, BatchNormState& s, const Tensor& mean, const Tensor& biased_var,
                              int64_t values_per_channel) {
  const char* op = "batchnorm_update_running";
  LS_CHECK(s.running_mean.defined() && s.running_var.defined(), op, " of '", s.name,
           "': running statistics are not bound");
  const int64_t c = s.running_mean.numel();
  LS_CHECK(values_per_channel >= 0, op, " of '", s.name, "': ", values_per_channel, " values per channel");
  check_shape_and_device(op, ctx, "running mean", s.running_mean, Shape{c});
  check_shape_and_device(op, ctx, "running variance", s.running_var, Shape{c});
  check_shape_and_device(op, ctx, "mean", mean, Shape{c});
  check_shape_and_device(op, ctx, "variance", biased_var, Shape{c});
  dispatch(op, ctx,
           [&] {
             cpu::batchnorm_update_running(s.running_mean.data(), s.running_var.data(), mean.data(),
                                           biased_var.data(), c, values_per_channel, s.momentum);
           },
           LS_CUDA_TWIN(gpu, {
             cuda::batchnorm_update_running(gpu.compute_stream, s.running_mean.data(), s.running_var.data(),
                                            mean.data(), biased_var.data(), c, values_per_channel, s.momentum);
           }));
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
