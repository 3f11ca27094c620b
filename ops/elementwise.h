#pragma once
// Element-wise ops on tensors of one device, dispatched to the CPU loops or
// the CUDA kernels by the context's device. The tensors of a call are all f32
// or, on a GPU, all bf16 (math in FP32, ops/checks.h check_stored).
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

void relu_forward(Context& ctx, const Tensor& x, Tensor& y);
// dx = dy * (y > 0); added to dx instead when `accumulate`.
void relu_backward(Context& ctx, const Tensor& y, const Tensor& dy, Tensor& dx, bool accumulate);

}  // namespace lockstep::ops
