#include "ops/tensor_ops.h"

#include "base/error.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"
#include "kernels/cpu/tensor_ops_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/tensor_ops_cuda.h"
#endif

namespace lockstep::ops {

void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& y) {
  LS_CHECK(a.shape() == b.shape(), "add: shapes ", a.shape().str(), " and ", b.shape().str(), " differ");
  check_same("add", ctx, a, {&b, &y});
  [[maybe_unused]] const DType dtype = check_stored("add", ctx, {&a, &b, &y});
  dispatch("add", ctx, [&] { cpu::add(a.data(), b.data(), y.data(), a.numel()); },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::add(gpu.compute_stream, elems<T>(a), elems<T>(b), elems<T>(y), a.numel());
             });
           }));
}

void copy_or_add(Context& ctx, const Tensor& src, Tensor& dst, bool accumulate) {
  check_same("copy_or_add", ctx, src, {&dst});
  [[maybe_unused]] const DType dtype = check_stored("copy_or_add", ctx, {&src, &dst});
  dispatch("copy_or_add", ctx, [&] { cpu::copy_or_add(src.data(), dst.data(), src.numel(), accumulate); },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::copy_or_add(gpu.compute_stream, elems<T>(src), elems<T>(dst), src.numel(), accumulate);
             });
           }));
}

}  // namespace lockstep::ops
