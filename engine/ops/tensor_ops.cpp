#include "engine/ops/tensor_ops.h"

#include "engine/error.h"
#include "engine/ops/elementwise.h"
#include "kernels/cpu/tensor_ops_cpu.h"

namespace lockstep::ops {

void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& y) {
  LS_CHECK(a.shape() == b.shape(), "add: shapes ", a.shape().str(), " and ", b.shape().str(), " differ");
  check_same("add", ctx, a, {&b, &y});
  if (ctx.device().is_cpu()) return cpu::add(a.data(), b.data(), y.data(), a.numel());
  LS_FAIL("add on ", ctx.device().str(), ": the CUDA backend does not implement it yet");
}

void copy_or_add(Context& ctx, const Tensor& src, Tensor& dst, bool accumulate) {
  check_same("copy_or_add", ctx, src, {&dst});
  if (ctx.device().is_cpu()) return cpu::copy_or_add(src.data(), dst.data(), src.numel(), accumulate);
  LS_FAIL("copy_or_add on ", ctx.device().str(), ": the CUDA backend does not implement it yet");
}

}  // namespace lockstep::ops
