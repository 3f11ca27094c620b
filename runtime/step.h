#pragma once
// StepInfo: what one training step is, handed explicitly from the replica
// manager to the model, its layers and the ops that draw random numbers.
#include <cstdint>

namespace lockstep {

// Counter-based randomness (dropout) is keyed by the training seed, the step
// and the global index of this replica's first sample, so N replicas draw the
// same numbers as one replica over the whole batch. Evaluation passes {}.
struct StepInfo {
  uint64_t seed = 0;
  uint64_t step = 0;
  int64_t sample_offset = 0;
};

}  // namespace lockstep
