#pragma once
// Learning-rate schedules over the course of training, as a function of the
// position in epochs (fractional: epoch + batch / batches_per_epoch).
//  constant: base
//  step:     base * gamma^floor(epoch / step_epochs)
//  cosine:   base * (1 + cos(pi * t)) / 2, t the fraction of training after warmup
// With warmup, the rate rises linearly from near 0 to base over the first warmup_epochs.
#include <string>

namespace lockstep {

enum class ScheduleKind { constant, step, cosine };

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::constant;
  float base_lr = 0.1f;
  double warmup_epochs = 0.0;
  double total_epochs = 1.0;
  double step_epochs = 30.0;  // step: decay every this many epochs
  float gamma = 0.1f;         // step: the decay factor

  float at(double epoch_position) const;
};

// "constant", "step" or "cosine"; throws an Error naming the text otherwise.
ScheduleKind parse_schedule(const std::string& name);
const char* schedule_name(ScheduleKind kind);

}  // namespace lockstep
