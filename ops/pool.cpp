#include "ops/pool.h"

#include "base/error.h"
#include "ops/checks.h"
#include "ops/cpu_nchw.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"
#include "kernels/cpu/pool_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/pool_cuda.h"
#endif

namespace lockstep::ops {

namespace {

struct Checked {
  PoolGeometry g;
  DType dtype;  // of every tensor: f32, or bf16 on a GPU
};

// Checks x, y (and dy, dx when given) against each other and returns the geometry.
Checked checked_geometry(const char* op, Context& ctx, const Tensor& x, const Tensor& y, const Tensor* dy,
                         const Tensor* dx, const PoolWindow& window) {
  const DType dtype = dy ? operand_dtype(op, ctx, {{"input", &x}, {"output", &y}, {"output gradient", dy},
                                                   {"input gradient", dx}})
                         : operand_dtype(op, ctx, {{"input", &x}, {"output", &y}});
  Shape out = pool_output_shape(op, x.shape(), window);
  check_shape(op, "output", y, out);
  if (dy) {
    check_shape(op, "output gradient", *dy, out);
    check_shape(op, "input gradient", *dx, x.shape());
  }
  check_format(op, x, {&y, dy, dx});
  return {pool_geometry(x.dim(0) * x.dim(1), x.dim(2), x.dim(3), window), dtype};
}

#if LOCKSTEP_WITH_CUDA
// The cuDNN pooling of either storage type (kernels/cuda/pool_cuda.h).
void pool_forward_on(CudaState& gpu, const Checked& c, PoolMode mode, const Tensor& x, Tensor& y) {
  if (c.dtype == DType::bf16)
    cuda::pool2d_forward(gpu, c.g, mode, x.bf16_data(), y.bf16_data(), x.format(), x.dim(1));
  else
    cuda::pool2d_forward(gpu, c.g, mode, x.data(), y.data(), x.format(), x.dim(1));
}

void pool_backward_on(CudaState& gpu, const Checked& c, PoolMode mode, const Tensor& x, const Tensor& y,
                      const Tensor& dy, Tensor& dx, bool accumulate) {
  if (c.dtype == DType::bf16)
    cuda::pool2d_backward(gpu, c.g, mode, x.bf16_data(), y.bf16_data(), dy.bf16_data(), dx.bf16_data(), accumulate,
                          x.format(), x.dim(1));
  else
    cuda::pool2d_backward(gpu, c.g, mode, x.data(), y.data(), dy.data(), dx.data(), accumulate, x.format(),
                          x.dim(1));
}
#endif

}  // namespace

Shape pool_output_shape(const char* op, const Shape& x_shape, const PoolWindow& window) {
  LS_CHECK(x_shape.rank() == 4, op, ": input must be [N, C, H, W], got ", x_shape.str());
  std::string why = pool_error(x_shape[2], x_shape[3], window);
  LS_CHECK(why.empty(), op, ": input ", x_shape.str(), " with ", pool_window_text(window), ": ", why);
  return Shape{x_shape[0], x_shape[1], pool_output_extent(x_shape[2], window), pool_output_extent(x_shape[3], window)};
}

void max_pool2d_forward(Context& ctx, const Tensor& x, Tensor& y, const PoolWindow& window) {
  const char* op = "max_pool2d";
  const Checked checked = checked_geometry(op, ctx, x, y, nullptr, nullptr, window);
  const PoolGeometry& g = checked.g;
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             cpu::max_pool2d_forward(c.in(x), c.out(y, false), g);
             c.finish();
           },
           LS_CUDA_TWIN(gpu, { pool_forward_on(gpu, checked, PoolMode::max, x, y); }));
}

void max_pool2d_backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx,
                         const PoolWindow& window, bool accumulate) {
  const char* op = "max_pool2d backward";
  const Checked checked = checked_geometry(op, ctx, x, y, &dy, &dx, window);
  const PoolGeometry& g = checked.g;
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             cpu::max_pool2d_backward(c.in(x), c.in(dy), c.out(dx, accumulate), g, accumulate);
             c.finish();
           },
           LS_CUDA_TWIN(gpu, { pool_backward_on(gpu, checked, PoolMode::max, x, y, dy, dx, accumulate); }));
}

void avg_pool2d_forward(Context& ctx, const Tensor& x, Tensor& y, const PoolWindow& window) {
  const char* op = "avg_pool2d";
  const Checked checked = checked_geometry(op, ctx, x, y, nullptr, nullptr, window);
  const PoolGeometry& g = checked.g;
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             cpu::avg_pool2d_forward(c.in(x), c.out(y, false), g);
             c.finish();
           },
           LS_CUDA_TWIN(gpu, { pool_forward_on(gpu, checked, PoolMode::average, x, y); }));
}

void avg_pool2d_backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx,
                         const PoolWindow& window, bool accumulate) {
  const char* op = "avg_pool2d backward";
  const Checked checked = checked_geometry(op, ctx, x, y, &dy, &dx, window);
  const PoolGeometry& g = checked.g;
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             cpu::avg_pool2d_backward(c.in(dy), c.out(dx, accumulate), g, accumulate);
             c.finish();
           },
           LS_CUDA_TWIN(gpu, { pool_backward_on(gpu, checked, PoolMode::average, x, y, dy, dx, accumulate); }));
}

void global_avg_pool_forward(Context& ctx, const Tensor& x, Tensor& y) {
  const char* op = "global_avg_pool";
  LS_CHECK(x.shape().rank() == 4 && x.dim(2) * x.dim(3) > 0, op, ": input must be [N, C, H, W] with H, W > 0, got ",
           x.shape().str());
  check_shape(op, "output", y, Shape{x.dim(0), x.dim(1), 1, 1});
  check_device(op, ctx, {&x, &y});
  [[maybe_unused]] const DType dtype = check_stored(op, ctx, {&x, &y});
  const int64_t planes = x.dim(0) * x.dim(1), pixels = x.dim(2) * x.dim(3);
  // y [N, C, 1, 1] lies the same in either format, so only x's matters.
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             cpu::global_avg_pool_forward(c.in(x), y.data(), planes, pixels);
           },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               if (x.format() == MemoryFormat::nhwc)
                 cuda::global_avg_pool_forward_nhwc(gpu.compute_stream, elems<T>(x), elems<T>(y), x.dim(0), x.dim(1),
                                                    pixels);
               else
                 cuda::global_avg_pool_forward(gpu.compute_stream, elems<T>(x), elems<T>(y), planes, pixels);
             });
           }));
}

void global_avg_pool_backward(Context& ctx, const Tensor& dy, Tensor& dx, bool accumulate) {
  const char* op = "global_avg_pool backward";
  LS_CHECK(dx.shape().rank() == 4 && dx.dim(2) * dx.dim(3) > 0, op,
           ": input gradient must be [N, C, H, W] with H, W > 0, got ", dx.shape().str());
  check_shape(op, "output gradient", dy, Shape{dx.dim(0), dx.dim(1), 1, 1});
  check_device(op, ctx, {&dy, &dx});
  [[maybe_unused]] const DType dtype = check_stored(op, ctx, {&dy, &dx});
  const int64_t planes = dx.dim(0) * dx.dim(1), pixels = dx.dim(2) * dx.dim(3);
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             cpu::global_avg_pool_backward(dy.data(), c.out(dx, accumulate), planes, pixels, accumulate);
             c.finish();
           },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               if (dx.format() == MemoryFormat::nhwc)
                 cuda::global_avg_pool_backward_nhwc(gpu.compute_stream, elems<T>(dy), elems<T>(dx), dx.dim(0),
                                                     dx.dim(1), pixels, accumulate);
               else
                 cuda::global_avg_pool_backward(gpu.compute_stream, elems<T>(dy), elems<T>(dx), planes, pixels,
                                                accumulate);
             });
           }));
}

namespace {

DType check_adaptive(const char* op, Context& ctx, const Tensor& big, const Tensor& small) {
  LS_CHECK(big.shape().rank() == 4 && small.shape().rank() == 4 && big.dim(2) * big.dim(3) > 0 &&
               small.dim(2) * small.dim(3) > 0 && big.dim(0) == small.dim(0) && big.dim(1) == small.dim(1),
           op, ": input ", big.shape().str(), " and output ", small.shape().str(),
           " must be [N, C, H, W] of the same N and C, with H, W > 0");
  check_device(op, ctx, {&big, &small});
  return check_stored(op, ctx, {&big, &small});
}

}  // namespace

void adaptive_avg_pool2d_forward(Context& ctx, const Tensor& x, Tensor& y) {
  const char* op = "adaptive_avg_pool2d";
  [[maybe_unused]] const DType dtype = check_adaptive(op, ctx, x, y);
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             cpu::adaptive_avg_pool2d_forward(c.in(x), c.out(y, false), x.dim(0) * x.dim(1), x.dim(2), x.dim(3),
                                              y.dim(2), y.dim(3));
             c.finish();
           },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::adaptive_avg_pool_forward(gpu.compute_stream, elems<T>(x), elems<T>(y), x.dim(0), x.dim(1),
                                               x.dim(2), x.dim(3), y.dim(2), y.dim(3), x.format(), y.format());
             });
           }));
}

void adaptive_avg_pool2d_backward(Context& ctx, const Tensor& dy, Tensor& dx, bool accumulate) {
  const char* op = "adaptive_avg_pool2d backward";
  [[maybe_unused]] const DType dtype = check_adaptive(op, ctx, dx, dy);
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             cpu::adaptive_avg_pool2d_backward(c.in(dy), c.out(dx, accumulate), dx.dim(0) * dx.dim(1), dx.dim(2),
                                               dx.dim(3), dy.dim(2), dy.dim(3), accumulate);
             c.finish();
           },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::adaptive_avg_pool_backward(gpu.compute_stream, elems<T>(dy), elems<T>(dx), dx.dim(0), dx.dim(1),
                                                dx.dim(2), dx.dim(3), dy.dim(2), dy.dim(3), dx.format(), dy.format(),
                                                accumulate);
             });
           }));
}

}  // namespace lockstep::ops
