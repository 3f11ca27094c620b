#include "ops/dropout.h"

#include "base/error.h"
#include "ops/elementwise.h"
#include "kernels/cpu/dropout_cpu.h"
#include "kernels/dropout_math.h"

#if LOCKSTEP_WITH_CUDA
#include "runtime/cuda/cuda_context.h"
#include "kernels/cuda/dropout_cuda.h"
#endif

namespace lockstep::ops {

namespace {

void check_args(const char* op, Context& ctx, const Tensor& a, const Tensor& b, float p) {
  check_same(op, ctx, a, {&b});
  LS_CHECK(p >= 0.0f && p < 1.0f, op, ": p = ", p, " is outside [0, 1)");
  LS_CHECK(ctx.sample_offset >= 0, op, ": negative sample offset ", ctx.sample_offset);
}

// The global index of the tensor's first element: per_sample counts the
// elements of one sample, whatever the rank.
uint64_t first_index(const Context& ctx, const Tensor& t) {
  return static_cast<uint64_t>(ctx.sample_offset) * static_cast<uint64_t>(t.shape().per_sample());
}

}  // namespace

void dropout_forward(Context& ctx, const Tensor& x, Tensor& y, float p, uint64_t salt) {
  check_args("dropout", ctx, x, y, p);
  uint64_t key = dropout_key(ctx.seed, ctx.step, salt);
  if (ctx.device().is_cpu()) return cpu::dropout_forward(x.data(), y.data(), x.numel(), key, first_index(ctx, x), p);
#if LOCKSTEP_WITH_CUDA
  cuda::dropout_forward(ctx.cuda()->compute_stream, x.data(), y.data(), x.numel(), key, first_index(ctx, x), p);
#else
  LS_FAIL("dropout", " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void dropout_backward(Context& ctx, const Tensor& dy, Tensor& dx, float p, uint64_t salt, bool accumulate) {
  check_args("dropout backward", ctx, dy, dx, p);
  uint64_t key = dropout_key(ctx.seed, ctx.step, salt);
  if (ctx.device().is_cpu())
    return cpu::dropout_backward(dy.data(), dx.data(), dy.numel(), key, first_index(ctx, dy), p, accumulate);
#if LOCKSTEP_WITH_CUDA
  cuda::dropout_backward(ctx.cuda()->compute_stream, dy.data(), dx.data(), dy.numel(), key, first_index(ctx, dy), p,
                         accumulate);
#else
  LS_FAIL("dropout backward", " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

}  // namespace lockstep::ops
