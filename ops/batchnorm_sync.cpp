#include "ops/batchnorm_sync.h"

#include <initializer_list>

#include "base/error.h"
#include "kernels/bn_sync.h"
#include "kernels/cpu/batchnorm_cpu.h"
#include "kernels/cpu/bn_sync_cpu.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/batchnorm_cuda.h"
#include "kernels/cuda/bn_sync_cuda.h"
#endif

namespace lockstep::ops {

namespace {

// The buffer: bn_sync_doubles(C) doubles, then mean(dy) and mean(dy * xhat) as C floats each.
double* packed_of(Tensor& buffer) { return reinterpret_cast<double*>(buffer.raw()); }
float* grad_means_of(Tensor& buffer, int64_t channels) {
  return buffer.data() + 2 * bn_sync_doubles(channels);
}

int64_t check_synced(const char* op, Context& ctx, ReplicaGroup& group, const Tensor& x, Tensor& sync_buffer) {
  LS_CHECK(x.shape().rank() == 4, op, ": input must be [N, C, H, W], got ", x.shape().str());
  LS_CHECK(x.device() == ctx.device(), op, ": input on ", x.device().str(), ", context on ", ctx.device().str());
  LS_CHECK(group.size() >= 1, op, ": a replica group of ", group.size());
  const int64_t c = x.dim(1);
  check_device(op, ctx, {&sync_buffer});
  LS_CHECK(sync_buffer.numel() >= batchnorm_sync_buffer_floats(c), op, ": sync buffer of ", sync_buffer.numel(),
           " floats for ", c, " channels, needs ", batchnorm_sync_buffer_floats(c));
  return c;
}

}  // namespace

int64_t batchnorm_sync_buffer_floats(int64_t channels) { return 2 * bn_sync_doubles(channels) + 2 * channels; }

void batchnorm_forward_train_synced(Context& ctx, ReplicaGroup& group, const Tensor& x, const Tensor& gamma,
                                    const Tensor& beta, float eps, Tensor& y, Tensor& batch_mean, Tensor& batch_var,
                                    Tensor& saved_mean, Tensor& saved_inv_std, Tensor& sync_buffer) {
  const char* op = "batchnorm_forward_train_synced";
  const int64_t c = check_synced(op, ctx, group, x, sync_buffer);
  check_shape_and_device(op, ctx, "output", y, x.shape());
  for (const Tensor* t : std::initializer_list<const Tensor*>{&gamma, &beta, &batch_mean, &batch_var, &saved_mean,
                                                              &saved_inv_std})
    check_shape_and_device(op, ctx, "per-channel tensor", *t, Shape{c});
  for (const Tensor* t : std::initializer_list<const Tensor*>{&gamma, &beta, &batch_mean, &batch_var, &saved_mean,
                                                              &saved_inv_std})
    check_f32(op, "per-channel tensor", *t);
  [[maybe_unused]] const DType dtype = check_stored(op, ctx, {&x, &y});
  const MemoryFormat format = check_format(op, x, {&y});
  const int64_t n = x.dim(0), spatial = x.dim(2) * x.dim(3), count = n * spatial;
  double* packed = packed_of(sync_buffer);
  // This replica's statistics (saved_* are overwritten below), then its share
  // of the sums. The per-channel arrays and the all-reduced buffer do not
  // depend on the format: only the passes over the images take it.
  dispatch(op, ctx,
           [&] {
             cpu::batchnorm_batch_stats(x.data(), n, c, spatial, eps, batch_mean.data(), batch_var.data(),
                                        saved_inv_std.data(), format);
             cpu::bn_sync_pack_means(batch_mean.data(), count, c, packed);
           },
           LS_CUDA_TWIN(gpu, {
             void* scratch = ctx.workspace(cuda::batchnorm_scratch_bytes(n, c, spatial));
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::batchnorm_statistics(gpu.compute_stream, elems<T>(x), n, c, spatial, eps, batch_mean.data(),
                                          batch_var.data(), saved_mean.data(), saved_inv_std.data(), scratch, format);
             });
             cuda::bn_sync_pack_means(gpu.compute_stream, batch_mean.data(), count, c, packed);
           }));
  group.all_reduce_sum(ctx, packed, c + 1);
  dispatch(op, ctx, [&] { cpu::bn_sync_pack_vars(batch_mean.data(), batch_var.data(), count, c, packed); },
           LS_CUDA_TWIN(gpu, {
             cuda::bn_sync_pack_vars(gpu.compute_stream, batch_mean.data(), batch_var.data(), count, c, packed);
           }));
  group.all_reduce_sum(ctx, packed + c + 1, c);
  dispatch(op, ctx,
           [&] {
             cpu::bn_sync_finish_stats(packed, c, eps, saved_mean.data(), saved_inv_std.data());
             cpu::batchnorm_normalize(x.data(), n, c, spatial, saved_mean.data(), saved_inv_std.data(), gamma.data(),
                                      beta.data(), y.data(), format);
           },
           LS_CUDA_TWIN(gpu, {
             cuda::bn_sync_finish_stats(gpu.compute_stream, packed, c, eps, saved_mean.data(), saved_inv_std.data());
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::batchnorm_normalize(gpu.compute_stream, elems<T>(x), n, c, spatial, saved_mean.data(),
                                         saved_inv_std.data(), gamma.data(), beta.data(), elems<T>(y), format);
             });
           }));
}

void batchnorm_backward_synced(Context& ctx, ReplicaGroup& group, const Tensor& x, const Tensor& dy,
                               const Tensor& gamma, const Tensor& saved_mean, const Tensor& saved_inv_std,
                               Tensor& dgamma, Tensor& dbeta, Tensor* dx, bool accumulate, Tensor& sync_buffer) {
  const char* op = "batchnorm_backward_synced";
  const int64_t c = check_synced(op, ctx, group, x, sync_buffer);
  check_shape_and_device(op, ctx, "output gradient", dy, x.shape());
  if (dx) check_shape_and_device(op, ctx, "input gradient", *dx, x.shape());
  for (const Tensor* t : std::initializer_list<const Tensor*>{&gamma, &saved_mean, &saved_inv_std, &dgamma, &dbeta})
    check_shape_and_device(op, ctx, "per-channel tensor", *t, Shape{c});
  for (const Tensor* t : std::initializer_list<const Tensor*>{&gamma, &saved_mean, &saved_inv_std, &dgamma, &dbeta})
    check_f32(op, "per-channel tensor", *t);
  [[maybe_unused]] const DType dtype = check_stored(op, ctx, {&x, &dy, dx});
  const MemoryFormat format = check_format(op, x, {&dy, dx});
  const int64_t n = x.dim(0), spatial = x.dim(2) * x.dim(3);
  double* packed = packed_of(sync_buffer);
  double* sums = bn_sync_grad_sums(packed, c);
  float* mean_dy = grad_means_of(sync_buffer, c);
  float* mean_dy_xhat = mean_dy + c;
  // This replica's sums: its parameter gradients (the gradient all-reduce adds
  // them up), then, summed over replicas, the means the input gradient needs.
  dispatch(op, ctx,
           [&] {
             cpu::batchnorm_gradient_sums(x.data(), dy.data(), n, c, spatial, saved_mean.data(),
                                          saved_inv_std.data(), sums, sums + c, format);
             cpu::bn_sync_param_grads(packed, c, dgamma.data(), dbeta.data());
           },
           LS_CUDA_TWIN(gpu, {
             void* scratch = ctx.workspace(cuda::batchnorm_scratch_bytes(n, c, spatial));
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::batchnorm_gradient_sums(gpu.compute_stream, elems<T>(x), elems<T>(dy), n, c, spatial,
                                             saved_mean.data(), saved_inv_std.data(), sums, sums + c, scratch,
                                             format);
             });
             cuda::bn_sync_param_grads(gpu.compute_stream, packed, c, dgamma.data(), dbeta.data());
           }));
  group.all_reduce_sum(ctx, sums, 2 * c);
  if (!dx) return;
  dispatch(op, ctx,
           [&] {
             cpu::bn_sync_grad_means(packed, c, mean_dy, mean_dy_xhat);
             cpu::batchnorm_input_gradient(x.data(), dy.data(), n, c, spatial, saved_mean.data(),
                                           saved_inv_std.data(), gamma.data(), mean_dy, mean_dy_xhat, dx->data(),
                                           accumulate, format);
           },
           LS_CUDA_TWIN(gpu, {
             cuda::bn_sync_grad_means(gpu.compute_stream, packed, c, mean_dy, mean_dy_xhat);
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::batchnorm_input_gradient(gpu.compute_stream, elems<T>(x), elems<T>(dy), n, c, spatial,
                                              saved_mean.data(), saved_inv_std.data(), gamma.data(), mean_dy,
                                              mean_dy_xhat, elems<T>(*dx), accumulate, format);
             });
           }));
}

}  // namespace lockstep::ops
