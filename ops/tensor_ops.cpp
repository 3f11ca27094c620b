#include "ops/tensor_ops.h"

#include "base/error.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "kernels/cpu/tensor_ops_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/tensor_ops_cuda.h"
#endif

namespace lockstep::ops {

void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& y) {
  LS_CHECK(a.shape() == b.shape(), "add: shapes ", a.shape().str(), " and ", b.shape().str(), " differ");
  check_same("add", ctx, a, {&b, &y});
  dispatch("add", ctx, [&] { cpu::add(a.data(), b.data(), y.data(), a.numel()); },
           LS_CUDA_TWIN(gpu, { cuda::add(gpu.compute_stream, a.data(), b.data(), y.data(), a.numel()); }));
}

void copy_or_add(Context& ctx, const Tensor& src, Tensor& dst, bool accumulate) {
  check_same("copy_or_add", ctx, src, {&dst});
  dispatch("copy_or_add", ctx, [&] { cpu::copy_or_add(src.data(), dst.data(), src.numel(), accumulate); },
           LS_CUDA_TWIN(gpu, { cuda::copy_or_add(gpu.compute_stream, src.data(), dst.data(), src.numel(), accumulate); }));
}

}  // namespace lockstep::ops
