#pragma once
#include <cstdint>

#include "kernels/arena_segment.h"
#include "kernels/sgd_math.h"

namespace lockstep::cpu {

// One pass over every segment of the arenas: updates w and v, clears g.
// With hyper.grad_scale set (a host pointer here), g is scaled by it first.
void sgd_momentum(float* weights, float* grads, float* velocity, const ArenaSegment* segments, int segment_count,
                  const SgdHyper& hyper);

// The sum of x[i]^2 over n values, in double, in an order fixed by n alone
// (the same bits on any number of compute threads).
double sum_of_squares(const float* x, int64_t n);

}  // namespace lockstep::cpu
