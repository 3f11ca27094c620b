#include "ops/conv.h"

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "ops/checks.h"
#include "ops/cpu_nchw.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"
#include "runtime/cpu_convolution.h"
#include "kernels/cpu/conv_cpu.h"
#include "kernels/cpu/tensor_ops_cpu.h"

#if LOCKSTEP_WITH_DNNL
#include "kernels/cpu/dnnl/conv_dnnl.h"
#endif

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/bf16_operands_cuda.h"
#include "kernels/cuda/conv_cuda.h"
#include "kernels/cuda/tensor_ops_cuda.h"
#include "base/environment.h"
#endif

namespace lockstep::ops {

namespace {

// A call to the oneDNN convolution, compiled away (with the library) in a
// build without it, where cpu_conv_on_dnnl() is always false.
#if LOCKSTEP_WITH_DNNL
#define LS_DNNL(call) call
#else
#define LS_DNNL(call) (void)0
#endif

Shape output_shape(const ConvGeometry& g) { return Shape{g.batch, g.out_channels, g.out_h, g.out_w}; }

// Scratch for a chunk of samples' column matrix and product (kernels/cpu/conv_cpu.h).
float* column_buffer(Context& ctx, const ConvGeometry& g) {
  return ctx.workspace(sizeof(float) * static_cast<size_t>(cpu::conv_scratch_floats(g)));
}

// NHWC images go to oneDNN's channels-last kernels as they are (no NCHW
// copies: kernels/cpu/dnnl/conv_dnnl.h); the im2col reference computes on
// NCHW copies.
bool dnnl_channels_last(const Tensor& image) { return image.format() == MemoryFormat::nhwc && cpu_conv_on_dnnl(); }

// The formats of the images (x, y and their gradients, which must agree) and
// of the filter (either: cuDNN takes an NCHW filter with NHWC images too).
#if LOCKSTEP_WITH_CUDA
cuda::ConvFormats conv_formats(const char* op, const Tensor& image, std::initializer_list<const Tensor*> others,
                               const Tensor& filter) {
  return {check_format(op, image, others), filter.format()};
}

cuda::BiasRef bias_ref(const Tensor* bias) {
  if (!bias) return {};
  return {bias->raw(), bias->dtype() == DType::bf16};
}

const bf16_bits* bf16_in(const Tensor& t) { return t.bf16_data(); }
bf16_bits* bf16_out(Tensor& t) { return t.bf16_data(); }
#endif

}  // namespace

ConvGeometry conv2d_geometry(const char* op, const Shape& x, const Shape& w, int stride, int padding) {
  LS_CHECK(x.rank() == 4, op, ": input ", x.str(), " is not [N, C, H, W]");
  LS_CHECK(w.rank() == 4 && w[2] == w[3], op, ": weight ", w.str(), " is not [O, C, K, K]");
  LS_CHECK(w[1] == x[1], op, ": weight ", w.str(), " expects ", w[1], " input channels, input ", x.str(), " has ",
           x[1]);
  ConvGeometry g;
  std::string problem = ConvGeometry::make(x[0], x[1], x[2], x[3], w[0], w[2], stride, padding, g);
  if (!problem.empty())
    LS_FAIL(op, ": input ", x.str(), ", weight ", w.str(), ", stride ", stride, ", padding ", padding, ": ",
            problem);
  return g;
}

void conv2d_forward(Context& ctx, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int stride,
                    int padding) {
  const char* op = "conv2d forward";
  const DType dtype = operand_dtype(op, ctx, {{"input", &x}, {"weight", &w}, {"output", &y}});
  ConvGeometry g = conv2d_geometry(op, x.shape(), w.shape(), stride, padding);
  check_shape(op, "output", y, output_shape(g));
  if (bias) {
    check_bias_dtype(op, ctx, "bias", *bias, dtype);
    LS_CHECK(bias->shape() == Shape{g.out_channels}, op, ": bias ", bias->shape().str(), " for weight ",
             w.shape().str());
  }
  check_format(op, x, {&y});
  dispatch(op, ctx,
           [&] {
             const float* b = bias ? bias->data() : nullptr;
             if (dnnl_channels_last(x)) {
               CpuNchw c;  // the filter, [O, C, K, K] on the CPU
               LS_DNNL(cpu::dnnl_conv2d_forward(g, x.data(), c.in(w), b, y.data(), MemoryFormat::nhwc));
               return;
             }
             CpuNchw c;
             const float *xs = c.in(x), *ws = c.in(w);
             float* ys = c.out(y, false);
             if (cpu_conv_on_dnnl())
               LS_DNNL(cpu::dnnl_conv2d_forward(g, xs, ws, b, ys));
             else
               cpu::conv2d_forward(g, xs, ws, b, ys, column_buffer(ctx, g));
             c.finish();
           },
           LS_CUDA_TWIN(gpu, {
             const cuda::ConvFormats formats = conv_formats(op, x, {&y}, w);
             if (dtype == DType::bf16)
               cuda::conv2d_forward(gpu, g, bf16_in(x), bf16_in(w), bias_ref(bias), bf16_out(y), formats);
             else
               cuda::conv2d_forward(gpu, g, x.data(), w.data(), bias ? bias->data() : nullptr, y.data(), formats);
           }));
}

void conv2d_backward_data(Context& ctx, const Tensor& dy, const Tensor& w, Tensor& dx, int stride, int padding,
                          bool accumulate) {
  const char* op = "conv2d backward data";
  const DType dtype = operand_dtype(op, ctx, {{"output gradient", &dy}, {"weight", &w}, {"input gradient", &dx}});
  ConvGeometry g = conv2d_geometry(op, dx.shape(), w.shape(), stride, padding);
  check_shape(op, "output gradient", dy, output_shape(g));
  check_format(op, dy, {&dx});
  dispatch(op, ctx,
           [&] {
             if (dnnl_channels_last(dy)) {
               CpuNchw c;
               LS_DNNL(cpu::dnnl_conv2d_backward_data(g, dy.data(), c.in(w), dx.data(), accumulate,
                                                      MemoryFormat::nhwc));
               return;
             }
             CpuNchw c;
             const float *dys = c.in(dy), *ws = c.in(w);
             float* dxs = c.out(dx, accumulate);
             if (cpu_conv_on_dnnl())
               LS_DNNL(cpu::dnnl_conv2d_backward_data(g, dys, ws, dxs, accumulate));
             else
               cpu::conv2d_backward_data(g, dys, ws, dxs, accumulate, column_buffer(ctx, g));
             c.finish();
           },
           LS_CUDA_TWIN(gpu, {
             const cuda::ConvFormats formats = conv_formats(op, dy, {&dx}, w);
             if (dtype == DType::bf16)
               cuda::conv2d_backward_data(gpu, g, bf16_in(dy), bf16_in(w), bf16_out(dx), accumulate, formats);
             else
               cuda::conv2d_backward_data(gpu, g, dy.data(), w.data(), dx.data(), accumulate, formats);
           }));
}

void conv2d_backward_filter(Context& ctx, const Tensor& x, const Tensor& dy, Tensor& dw, int stride, int padding) {
  const char* op = "conv2d backward filter";
  const DType dtype = operand_dtype(op, ctx, {{"input", &x}, {"output gradient", &dy}});
  check_tensor(op, ctx, "weight gradient", dw);
  ConvGeometry g = conv2d_geometry(op, x.shape(), dw.shape(), stride, padding);
  check_shape(op, "output gradient", dy, output_shape(g));
  check_format(op, x, {&dy});
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             if (dnnl_channels_last(x)) {
               LS_DNNL(cpu::dnnl_conv2d_backward_filter(g, x.data(), dy.data(), c.out(dw, false), MemoryFormat::nhwc));
               c.finish();
               return;
             }
             const float *xs = c.in(x), *dys = c.in(dy);
             float* dws = c.out(dw, false);
             if (cpu_conv_on_dnnl())
               LS_DNNL(cpu::dnnl_conv2d_backward_filter(g, xs, dys, dws));
             else
               cpu::conv2d_backward_filter(g, xs, dys, dws, column_buffer(ctx, g));
             c.finish();
           },
           LS_CUDA_TWIN(gpu, {
             const cuda::ConvFormats formats = conv_formats(op, x, {&dy}, dw);
             if (dtype == DType::bf16) {
               auto* dw_bf16 = reinterpret_cast<bf16_bits*>(ctx.workspace(sizeof(bf16_bits) * dw.numel()));
               cuda::conv2d_backward_filter(gpu, g, bf16_in(x), bf16_in(dy), dw.data(), dw_bf16, formats);
             } else {
               cuda::conv2d_backward_filter(gpu, g, x.data(), dy.data(), dw.data(), formats);
             }
           }));
}

void conv2d_backward_bias(Context& ctx, const Tensor& dy, Tensor& db) {
  const char* op = "conv2d backward bias";
  const DType dtype = operand_dtype(op, ctx, {{"output gradient", &dy}});
  check_tensor(op, ctx, "bias gradient", db);
  LS_CHECK(dy.shape().rank() == 4, op, ": output gradient ", dy.shape().str(), " is not [N, O, OH, OW]");
  LS_CHECK(db.shape() == Shape{dy.dim(1)}, op, ": bias gradient ", db.shape().str(), " for output gradient ",
           dy.shape().str());
  const int64_t n = dy.dim(0), channels = dy.dim(1), spatial = dy.dim(2) * dy.dim(3);
  dispatch(op, ctx,
           [&] {
             CpuNchw c;
             cpu::channel_sums(c.in(dy), n, channels, spatial, db.data());
           },
           LS_CUDA_TWIN(gpu, {
             void* scratch = ctx.workspace(cuda::channel_sums_scratch_bytes(n, channels, spatial));
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               cuda::channel_sums(gpu.compute_stream, elems<T>(dy), n, channels, spatial, db.data(), scratch,
                                  dy.format());
             });
           }));
}

}  // namespace lockstep::ops
