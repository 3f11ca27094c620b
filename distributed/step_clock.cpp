#include "distributed/step_clock.h"

#include "runtime/host_syncs.h"

namespace lockstep {

StepClock::StepClock(Context& ctx)
    : ctx_(ctx),
      syncs_at_start_(host_synchronizations_on_this_thread()),
      launches_at_start_(host_launches_on_this_thread()) {
  ctx_.clear_marks();
  start_ = ctx_.mark_time();
}

void StepClock::mark_compute_end(const TrainStepResult& result) {
  compute_end_ = result.end_mark >= 0 ? result.end_mark : ctx_.mark_time();
}

void StepClock::mark_update() { update_ = ctx_.mark_time(); }

void StepClock::mark_launch() { launch_ = ctx_.mark_time(); }

void StepClock::queued(PhaseTimes& times) {
  end_ = ctx_.mark_time();
  if (syncs_at_start_)
    times.host_syncs = times.host_syncs.value_or(0) + (*host_synchronizations_on_this_thread() - *syncs_at_start_);
}

void StepClock::add_phases(PhaseTimes& times, const TrainStepResult& result) {
  if (launch_ >= 0) {
    times.data += ctx_.seconds_between(start_, launch_);
    times.forward += ctx_.seconds_between(launch_, end_);
  } else {
    // An empty slice has no forward or backward marks: both phases are nil.
    const int forward = result.forward_mark >= 0 ? result.forward_mark : compute_end_;
    const int backward = result.backward_mark >= 0 ? result.backward_mark : compute_end_;
    times.data += ctx_.seconds_between(start_, forward);
    times.forward += ctx_.seconds_between(forward, backward);
    times.backward += ctx_.seconds_between(backward, compute_end_);
    // After backward: waiting for the all-reduces and the batch-norm combination.
    times.communication += ctx_.seconds_between(compute_end_, update_);
    times.update += ctx_.seconds_between(update_, end_);
  }
  times.steps += 1;
  if (launches_at_start_)
    times.host_launches = times.host_launches.value_or(0) + (*host_launches_on_this_thread() - *launches_at_start_);
}

}  // namespace lockstep
