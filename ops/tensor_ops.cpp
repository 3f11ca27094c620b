#include "ops/tensor_ops.h"

#include "base/error.h"
#include "ops/elementwise.h"
#include "kernels/cpu/tensor_ops_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "runtime/cuda/cuda_context.h"
#include "kernels/cuda/tensor_ops_cuda.h"
#endif

namespace lockstep::ops {

void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& y) {
  LS_CHECK(a.shape() == b.shape(), "add: shapes ", a.shape().str(), " and ", b.shape().str(), " differ");
  check_same("add", ctx, a, {&b, &y});
  if (ctx.device().is_cpu()) return cpu::add(a.data(), b.data(), y.data(), a.numel());
#if LOCKSTEP_WITH_CUDA
  cuda::add(ctx.cuda()->compute_stream, a.data(), b.data(), y.data(), a.numel());
#else
  LS_FAIL("add", " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void copy_or_add(Context& ctx, const Tensor& src, Tensor& dst, bool accumulate) {
  check_same("copy_or_add", ctx, src, {&dst});
  if (ctx.device().is_cpu()) return cpu::copy_or_add(src.data(), dst.data(), src.numel(), accumulate);
#if LOCKSTEP_WITH_CUDA
  cuda::copy_or_add(ctx.cuda()->compute_stream, src.data(), dst.data(), src.numel(), accumulate);
#else
  LS_FAIL("copy_or_add", " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

}  // namespace lockstep::ops
