#pragma once
#include <cstdint>

#include "kernels/arena_segment.h"
#include "kernels/sgd_math.h"

namespace lockstep::cpu {

// One pass over every segment of the arenas: updates w and v, clears g.
// With hyper.grad_scale set (a host pointer here), g is scaled by it first.
// With `weights_bf16` set (precision bf16), each updated weight is also
// written there rounded to bf16 (kernels/bf16_math.h), at the same offset:
// the copy the next forward's convolutions and GEMMs read.
// With hyper.adamw, the AdamW update instead (kernels/adamw_math.h):
// `velocity` holds exp_avg and `exp_avg_sq` the second moment.
void sgd_momentum(float* weights, float* grads, float* velocity, const ArenaSegment* segments, int segment_count,
                  const SgdHyper& hyper, uint16_t* weights_bf16 = nullptr, float* exp_avg_sq = nullptr);

// The sum of x[i]^2 over n values, in double, in an order fixed by n alone
// (the same bits on any number of compute threads).
double sum_of_squares(const float* x, int64_t n);

}  // namespace lockstep::cpu
