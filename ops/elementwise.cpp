#include "ops/elementwise.h"

#include "base/error.h"
#include "kernels/cpu/elementwise_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "runtime/cuda/cuda_context.h"
#include "kernels/cuda/elementwise_cuda.h"
#endif

namespace lockstep::ops {

void check_same(const char* op, Context& ctx, const Tensor& expected, std::initializer_list<const Tensor*> others) {
  LS_CHECK(expected.device() == ctx.device(), op, ": tensor on ", expected.device().str(), ", context on ",
           ctx.device().str());
  for (const Tensor* t : others) {
    LS_CHECK(t->numel() == expected.numel(), op, ": shapes ", expected.shape().str(), " and ", t->shape().str(),
             " differ");
    LS_CHECK(t->device() == ctx.device(), op, ": tensor on ", t->device().str(), ", context on ", ctx.device().str());
  }
}

void relu_forward(Context& ctx, const Tensor& x, Tensor& y) {
  check_same("relu", ctx, x, {&y});
  if (ctx.device().is_cpu()) return cpu::relu_forward(x.data(), y.data(), x.numel());
#if LOCKSTEP_WITH_CUDA
  cuda::relu_forward(ctx.cuda()->compute_stream, x.data(), y.data(), x.numel());
#else
  LS_FAIL("relu on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void relu_backward(Context& ctx, const Tensor& y, const Tensor& dy, Tensor& dx, bool accumulate) {
  check_same("relu backward", ctx, y, {&dy, &dx});
  if (ctx.device().is_cpu()) return cpu::relu_backward(y.data(), dy.data(), dx.data(), y.numel(), accumulate);
#if LOCKSTEP_WITH_CUDA
  cuda::relu_backward(ctx.cuda()->compute_stream, y.data(), dy.data(), dx.data(), y.numel(), accumulate);
#else
  LS_FAIL("relu backward on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

}  // namespace lockstep::ops
