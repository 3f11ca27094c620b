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
// With hyper.ema_decay > 0, `ema` (the arena's size) takes the moving average
// of each updated fp32 weight (kernels/ema_math.h).
void sgd_momentum(float* weights, float* grads, float* velocity, const ArenaSegment* segments, int segment_count,
                  const SgdHyper& hyper, uint16_t* weights_bf16 = nullptr, float* exp_avg_sq = nullptr,
                  float* ema = nullptr);

// average[i] = ema_lerp(average[i], value[i], weight) over n values: the
// moving average of the running statistics.
void ema_average(float* average, const float* value, int64_t n, float weight);

// The sum of x[i]^2 over n values, in double, in an order fixed by n alone
// (the same bits on any number of compute threads).
double sum_of_squares(const float* x, int64_t n);

}  // namespace lockstep::cpu
