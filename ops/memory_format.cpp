#include "ops/memory_format.h"

#include "base/error.h"
#include "kernels/cpu/transpose_cpu.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"
#include "ops/tensor_ops.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/transpose_cuda.h"
#endif

namespace lockstep::ops {

void convert_format(Context& ctx, const Tensor& src, Tensor& dst) {
  const char* op = "convert_format";
  LS_CHECK(src.defined() && dst.defined(), op, ": source or destination is not allocated");
  check_device(op, ctx, {&src, &dst});
  [[maybe_unused]] const DType dtype = check_stored(op, ctx, {&src, &dst});
  LS_CHECK(src.shape().rank() == 4, op, ": source must be [N, C, H, W], got ", src.shape().str());
  check_shape(op, "destination", dst, src.shape());
  if (src.format() == dst.format()) {
    copy_or_add(ctx, src, dst, false);
    return;
  }
  LS_CHECK(src.numel() == 0 || src.raw() != dst.raw(), op, ": source and destination must be separate buffers");
  // Per sample, NCHW is a [C, H*W] matrix and NHWC its transpose.
  const int64_t n = src.dim(0), c = src.dim(1), spatial = src.dim(2) * src.dim(3);
  const bool to_nhwc = dst.format() == MemoryFormat::nhwc;
  const int64_t rows = to_nhwc ? c : spatial, cols = to_nhwc ? spatial : c;
  dispatch(op, ctx, [&] { cpu::transpose_planes(src.data(), dst.data(), n, rows, cols); },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::transpose_planes(gpu.compute_stream, elems<T>(src), elems<T>(dst), n, rows, cols);
             });
           }));
}

Tensor to_format(Context& ctx, const Tensor& src, MemoryFormat format) {
  Tensor dst = Tensor::empty(src.shape(), ctx.device(), src.dtype()).with_format(format);
  convert_format(ctx, src, dst);
  return dst;
}

}  // namespace lockstep::ops
