#pragma once
// Pooling ops on [N, C, H, W] tensors of one device. The window comes already
// resolved (stride >= 1); a window or image that does not fit throws an Error
// naming the op, the shapes and the window. Backward writes dx, or adds to it
// when `accumulate`. x and y are passed to backward because cuDNN reads them.
// Max and average pooling take tensors all f32, or all bf16 on a GPU (cuDNN
// computes bf16 pooling in FP32 and rounds each output once: a max is exact);
// bf16 on the CPU or mixed types are an Error naming the op
// (operand_dtype in ops/checks.h).
#include "runtime/context.h"
#include "runtime/tensor.h"
#include "kernels/pool_geometry.h"

namespace lockstep::ops {

// The output shape of pooling `x_shape` ([N, C, H, W]) with `window`; throws
// an Error starting with `op` when they do not fit.
Shape pool_output_shape(const char* op, const Shape& x_shape, const PoolWindow& window);

void max_pool2d_forward(Context& ctx, const Tensor& x, Tensor& y, const PoolWindow& window);
void max_pool2d_backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx,
                         const PoolWindow& window, bool accumulate);

// Divides by kernel^2 everywhere, padding included (count_include_pad).
void avg_pool2d_forward(Context& ctx, const Tensor& x, Tensor& y, const PoolWindow& window);
void avg_pool2d_backward(Context& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx,
                         const PoolWindow& window, bool accumulate);

// [N, C, H, W] -> [N, C, 1, 1], the mean of each plane.
void global_avg_pool_forward(Context& ctx, const Tensor& x, Tensor& y);
void global_avg_pool_backward(Context& ctx, const Tensor& dy, Tensor& dx, bool accumulate);

// [N, C, H, W] -> [N, C, y's H, y's W] as PyTorch's AdaptiveAvgPool2d
// (kernels/cpu/pool_cpu.h, kernels/cuda/pool_cuda.h); NCHW or NHWC, FP32 or bf16.
void adaptive_avg_pool2d_forward(Context& ctx, const Tensor& x, Tensor& y);
void adaptive_avg_pool2d_backward(Context& ctx, const Tensor& dy, Tensor& dx, bool accumulate);

}  // namespace lockstep::ops
