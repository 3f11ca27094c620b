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
  // Where set (a GPU step replayed from a CUDA graph, ReplicaOptions::cuda_graphs):
  // device memory holding the step, which the kernels read when they run, so
  // one captured graph draws each step's numbers. `step` is then only what
  // the host knows of it (the CPU reference ignores the pointer; GPU only).
  const uint64_t* step_on_device = nullptr;
};

}  // namespace lockstep
