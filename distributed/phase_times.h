#pragma once
// PhaseTimes: where the training steps' time went, as the replica manager
// reports it (ReplicaManager::phase_times, StepClock).
#include <cstdint>
#include <optional>

namespace lockstep {

// Seconds spent in each phase, summed over the steps since the last reset
// (replica 0's view; the slowest replica sets the pace, so the phases of the
// others mostly show up as exposed communication).
struct PhaseTimes {
  double data = 0.0;          // host batch slice to the device
  double forward = 0.0;
  double backward = 0.0;
  double communication = 0.0; // exposed: waiting for all-reduces after backward, BN combination
  double update = 0.0;
  int64_t steps = 0;
  // Host synchronisations the steps made before their end-of-step read-back
  // (the most of any replica), where the GPU runtime counts them
  // (runtime/host_syncs.h); nullopt where it does not.
  std::optional<uint64_t> host_syncs;
  // Work the steps queued on GPU streams from the host (kernels, library
  // calls, copies, event records and waits; runtime/host_syncs.h), summed
  // over the steps, replica 0's; nullopt where the runtime cannot count them.
  // Divided by `steps`: what one step asks of the host.
  std::optional<uint64_t> host_launches;
  // Steps replayed from a CUDA graph (ReplicaOptions::cuda_graphs), and those
  // that captured one (also counted as replayed: they launch it). The whole
  // of a replayed step's device time counts as forward.
  int64_t graph_steps = 0;
  int64_t graph_captures = 0;
  // Steps whose batch the step before had already copied to the devices
  // (train_step's `next`).
  int64_t batches_ahead = 0;
};

}  // namespace lockstep
