#pragma once
// Training-mode dropout on a tensor of one device. The mask comes from
// dropout_key(step.seed, step.step, salt) at the global element index
// (step.sample_offset + n) * per_sample + i, so backward recomputes it and N
// replicas draw what one replica would over the whole batch.
// x and y (dy and dx) are both f32 or, on a GPU, both bf16 (math in FP32).
#include <cstdint>

#include "runtime/context.h"
#include "runtime/step.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// y = x * keep / (1 - p), keep drawn with probability 1 - p; 0 <= p < 1.
void dropout_forward(Context& ctx, const StepInfo& step, const Tensor& x, Tensor& y, float p, uint64_t salt);
// dx = dy * keep / (1 - p) with forward's mask; added to dx when `accumulate`.
void dropout_backward(Context& ctx, const StepInfo& step, const Tensor& dy, Tensor& dx, float p, uint64_t salt,
                      bool accumulate);

}  // namespace lockstep::ops
