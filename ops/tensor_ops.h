#pragma once
// Summing and copying ops on tensors of one device (the add and flatten
// layers). Shapes may differ; element counts must match. The tensors of a
// call are all f32 or, on a GPU, all bf16 (sums in FP32, rounded once).
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// y = a + b (a and b of one shape; y of their element count).
void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& y);
// dst = src, or dst += src when `accumulate` (src may be a reshaped dst).
void copy_or_add(Context& ctx, const Tensor& src, Tensor& dst, bool accumulate);

}  // namespace lockstep::ops
