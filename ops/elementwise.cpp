#include "ops/elementwise.h"

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"
#include "kernels/cpu/elementwise_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/elementwise_cuda.h"
#endif

namespace lockstep::ops {

void relu_forward(Context& ctx, const Tensor& x, Tensor& y) {
  check_same("relu", ctx, x, {&y});
  [[maybe_unused]] const DType dtype = check_stored("relu", ctx, {&x, &y});
  dispatch("relu", ctx, [&] { cpu::relu_forward(x.data(), y.data(), x.numel()); },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::relu_forward(gpu.compute_stream, elems<T>(x), elems<T>(y), x.numel());
             });
           }));
}

void relu_backward(Context& ctx, const Tensor& y, const Tensor& dy, Tensor& dx, bool accumulate) {
  const char* op = "relu backward";
  check_same(op, ctx, y, {&dy, &dx});
  [[maybe_unused]] const DType dtype = check_stored(op, ctx, {&y, &dy, &dx});
  dispatch(op, ctx, [&] { cpu::relu_backward(y.data(), dy.data(), dx.data(), y.numel(), accumulate); },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::relu_backward(gpu.compute_stream, elems<T>(y), elems<T>(dy), elems<T>(dx), y.numel(),
                                   accumulate);
             });
           }));
}

}  // namespace lockstep::ops
