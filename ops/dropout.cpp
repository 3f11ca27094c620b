#include "ops/dropout.h"

#include "base/error.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"
#include "kernels/cpu/dropout_cpu.h"
#include "kernels/dropout_math.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/dropout_cuda.h"
#endif

namespace lockstep::ops {

namespace {

DType check_args(const char* op, Context& ctx, const StepInfo& step, const Tensor& a, const Tensor& b, float p) {
  check_same(op, ctx, a, {&b});
  const DType dtype = check_stored(op, ctx, {&a, &b});
  LS_CHECK(!step.step_on_device || ctx.device().is_cuda(), op, ": a step in device memory on ", ctx.device().str());
  LS_CHECK(p >= 0.0f && p < 1.0f, op, ": p = ", p, " is outside [0, 1)");
  LS_CHECK(step.sample_offset >= 0, op, ": negative sample offset ", step.sample_offset);
  return dtype;
}

// The global index of the tensor's first element: per_sample counts the
// elements of one sample, whatever the rank.
uint64_t first_index(const StepInfo& step, const Tensor& t) {
  return static_cast<uint64_t>(step.sample_offset) * static_cast<uint64_t>(t.shape().per_sample());
}

// The key as the CUDA kernels take it: finished on the device when the step
// is there (a replayed CUDA graph), on the host otherwise.
[[maybe_unused]] DropoutKey device_key(const StepInfo& step, uint64_t salt) {
  return {dropout_key(step.seed, step.step, salt), random_key(step.seed, salt), step.step_on_device};
}

}  // namespace

void dropout_forward(Context& ctx, const StepInfo& step, const Tensor& x, Tensor& y, float p, uint64_t salt) {
  const char* op = "dropout";
  [[maybe_unused]] const DType dtype = check_args(op, ctx, step, x, y, p);
  const uint64_t key = dropout_key(step.seed, step.step, salt), first = first_index(step, x);
  dispatch(op, ctx, [&] { cpu::dropout_forward(x.data(), y.data(), x.numel(), key, first, p); },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::dropout_forward(gpu.compute_stream, elems<T>(x), elems<T>(y), x.numel(), device_key(step, salt),
                                     first, p);
             });
           }));
}

void dropout_backward(Context& ctx, const StepInfo& step, const Tensor& dy, Tensor& dx, float p, uint64_t salt,
                      bool accumulate) {
  const char* op = "dropout backward";
  [[maybe_unused]] const DType dtype = check_args(op, ctx, step, dy, dx, p);
  const uint64_t key = dropout_key(step.seed, step.step, salt), first = first_index(step, dy);
  dispatch(op, ctx, [&] { cpu::dropout_backward(dy.data(), dx.data(), dy.numel(), key, first, p, accumulate); },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::dropout_backward(gpu.compute_stream, elems<T>(dy), elems<T>(dx), dy.numel(),
                                      device_key(step, salt), first, p, accumulate);
             });
           }));
}

}  // namespace lockstep::ops
