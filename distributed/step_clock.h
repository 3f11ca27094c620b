#pragma once
// StepClock: the time marks and host counts of one replica's training step,
// added to that replica's PhaseTimes (distributed/replica_manager.h) once the
// step's read-back is over, so the step's body says only what it queues.
//
// A step marks its start here; an eager step then marks where its compute
// ended and its update began, and the model's result gives the marks between
// forward and backward. A step replayed from a CUDA graph marks the launch
// instead, and the whole of its device time counts as forward (a replay has
// no marks inside it).
#include <cstdint>
#include <optional>

#include "distributed/phase_times.h"
#include "runtime/context.h"
#include "runtime/model.h"

namespace lockstep {

class StepClock {
public:
  // Starts a new timeline on `ctx` and marks the step's start; the host
  // synchronisations and launches of this thread count from here.
  explicit StepClock(Context& ctx);

  void mark_compute_end(const TrainStepResult& result);  // after forward, backward and the statistics' queueing
  void mark_update();                                     // the collectives waited for, the update next
  void mark_launch();                                     // a graph step: its inputs staged, the graph next

  // Everything queued, just before the step's one read-back: marks the end
  // and counts the synchronisations made so far (a step should make none).
  void queued(PhaseTimes& times);
  // After the read-back: every mark has been reached, and the step's whole
  // share of launches is in.
  void add_phases(PhaseTimes& times, const TrainStepResult& result);

private:
  Context& ctx_;
  int start_ = -1, compute_end_ = -1, update_ = -1, launch_ = -1, end_ = -1;
  std::optional<uint64_t> syncs_at_start_, launches_at_start_;
};

}  // namespace lockstep
