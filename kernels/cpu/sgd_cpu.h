#pragma once
#include "kernels/arena_segment.h"
#include "kernels/sgd_math.h"

namespace lockstep::cpu {

// One pass over every segment of the arenas: updates w and v, clears g.
void sgd_momentum(float* weights, float* grads, float* velocity, const ArenaSegment* segments, int segment_count,
                  const SgdHyper& hyper);

}  // namespace lockstep::cpu
