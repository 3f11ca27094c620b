#include "ops/bf16.h"

#include "base/error.h"
#include "kernels/cpu/bf16_cpu.h"
#include "ops/dispatch.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/bf16_cuda.h"
#endif

namespace lockstep::ops {

void round_to_bf16(Context& ctx, Tensor& x) {
  LS_CHECK(x.dtype() == DType::f32 && x.device() == ctx.device(), "round_to_bf16: ", dtype_name(x.dtype()),
           " tensor on ", x.device().str(), " with a context on ", ctx.device().str(), " (f32 on the same device)");
  dispatch(
      "round_to_bf16", ctx, [&] { cpu::round_to_bf16_in_place(x.data(), x.numel()); },
      LS_CUDA_TWIN(gpu, { cuda::round_to_bf16(gpu.compute_stream, x.data(), x.numel()); }));
}

void round_where_gpu_stores_bf16(Context& ctx, Tensor& x) {
  if (ctx.precision_policy().rounds_in_f32 && x.dtype() == DType::f32)
    round_to_bf16(ctx, x);
}

void convert(Context& ctx, const Tensor& src, Tensor& dst) {
  const bool narrow = src.dtype() == DType::f32 && dst.dtype() == DType::bf16;
  const bool widen = src.dtype() == DType::bf16 && dst.dtype() == DType::f32;
  LS_CHECK((narrow || widen) && src.numel() == dst.numel() && src.device() == ctx.device() &&
               dst.device() == ctx.device(),
           "convert: ", src.shape().str(), " ", dtype_name(src.dtype()), " on ", src.device().str(), " into ",
           dst.shape().str(), " ", dtype_name(dst.dtype()), " on ", dst.device().str(),
           " (f32 to bf16 or back, the same count, on the context's device ", ctx.device().str(), ")");
  dispatch(
      "convert", ctx,
      [&] {
        if (narrow) cpu::narrow_to_bf16(src.data(), dst.bf16_data(), src.numel());
        else cpu::widen_from_bf16(src.bf16_data(), dst.data(), src.numel());
      },
      LS_CUDA_TWIN(gpu, {
        if (narrow) cuda::convert_stored(gpu.compute_stream, src.data(), dst.bf16_data(), src.numel());
        else cuda::convert_stored(gpu.compute_stream, src.bf16_data(), dst.data(), src.numel());
      }));
}

}  // namespace lockstep::ops
