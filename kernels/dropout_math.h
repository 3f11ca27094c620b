#pragma once
// Dropout's mask is never stored: element i of a step keeps its value when the
// counter-based draw at its global index is >= p. Forward and backward, CPU
// and CUDA, and every replica recompute the same draws from the same key.
#include <cstdint>

#include "kernels/elementwise_math.h"
#include "kernels/host_device.h"
#include "kernels/random_math.h"

namespace lockstep {

// The key of one dropout layer at one training step. `salt` tells layers apart
// (a hash of the layer's name), so two dropout layers draw different masks.
LS_HD uint64_t dropout_key(uint64_t seed, uint64_t step, uint64_t salt) {
  return random_key(random_key(seed, salt), step);
}

// A layer's key as a kernel takes it: known on the host (`value`), or built
// when the kernel runs from the layer's part and the step in device memory
// (a CUDA graph replays with each step's own step index).
struct DropoutKey {
  uint64_t value = 0;
  uint64_t layer = 0;                    // random_key(seed, salt)
  const uint64_t* step_on_device = nullptr;
  LS_HD uint64_t get() const { return step_on_device ? random_key(layer, *step_on_device) : value; }
};

// Keeps with probability 1 - p (up to the 2^-24 grid of the draw).
LS_HD bool dropout_keeps(uint64_t key, uint64_t global_index, float p) {
  return random_uniform(key, global_index) >= p;
}

// Inverted dropout: kept values are scaled by 1/(1-p) so the expectation is x.
LS_HD float dropout_scale(float p) { return 1.0f / (1.0f - p); }

LS_HD float dropout_apply(float x, bool keep, float scale) { return keep ? x * scale : 0.0f; }

}  // namespace lockstep
