#pragma once
// 2-D convolution on tensors of one device (square kernel, stride, zero
// padding), one function per cuDNN call it maps to: forward, backward data,
// backward filter, backward bias. Shapes: x [N, C, H, W], w [O, C, K, K],
// bias [O], y [N, O, OH, OW]. Each throws lockstep::Error naming the op and
// the shapes when they do not fit. Memory formats (kernels/memory_format.h):
// the images (x, y, dy, dx) all NCHW or all NHWC; the filter (w, dw) either,
// independently (NHWC: [O, K, K, C], as PyTorch's channels_last weights).
// The CPU computes NHWC on NCHW copies (ops/cpu_nchw.h).
//
// Storage types (operand_dtype in ops/checks.h): x, w, y, dx, dy all f32, or all bf16
// on a GPU (cuDNN's PSEUDO_BFLOAT16_CONFIG: bf16 operands, FP32 accumulation,
// each bf16 output rounded to nearest even once). With bf16 operands the
// bias is f32 or bf16 (rounded to bf16 and added to the FP32 sum before its
// one rounding), and dw and db stay f32: db is summed from dy widened, as
// f32; dw comes from cuDNN in bf16 (its backward filter writes dw in x's and
// dy's type, no float dw from bf16 inputs) and is widened, so each bf16
// weight gradient is its FP32 sum rounded once to bf16, as PyTorch AMP's
// convolution weight gradients are. bf16 tensors on the CPU, or mixed
// operand types, are an Error naming the op.
#include "runtime/context.h"
#include "runtime/tensor.h"
#include "kernels/conv_geometry.h"

namespace lockstep::ops {

// The geometry of convolving input `x` with weight `w`; throws when the
// shapes, stride or padding make no convolution.
ConvGeometry conv2d_geometry(const char* op, const Shape& x, const Shape& w, int stride, int padding);

// y = conv(x, w) + bias; `bias` may be null.
void conv2d_forward(Context& ctx, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int stride,
                    int padding);
// dx = dL/dx from dy (written, or added when `accumulate`); dx's shape is x's.
void conv2d_backward_data(Context& ctx, const Tensor& dy, const Tensor& w, Tensor& dx, int stride, int padding,
                          bool accumulate);
// dw = dL/dw (written).
void conv2d_backward_filter(Context& ctx, const Tensor& x, const Tensor& dy, Tensor& dw, int stride, int padding);
// db = dL/dbias, the sum of dy over samples and pixels (written).
void conv2d_backward_bias(Context& ctx, const Tensor& dy, Tensor& db);

}  // namespace lockstep::ops
