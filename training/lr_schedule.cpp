#include "training/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"

namespace lockstep {

float LrSchedule::at(double position) const {
  if (warmup_epochs > 0.0 && position < warmup_epochs)
    return static_cast<float>(base_lr * (position + 1e-3) / (warmup_epochs + 1e-3));  // never exactly zero
  switch (kind) {
    case ScheduleKind::constant: return base_lr;
    case ScheduleKind::step:
      return base_lr * std::pow(gamma, static_cast<float>(std::floor(position / std::max(step_epochs, 1e-9))));
    case ScheduleKind::cosine: {
      double span = std::max(total_epochs - warmup_epochs, 1e-9);
      double t = std::clamp((position - warmup_epochs) / span, 0.0, 1.0);
      return static_cast<float>(base_lr * 0.5 * (1.0 + std::cos(std::numbers::pi * t)));
    }
  }
  return base_lr;
}

ScheduleKind parse_schedule(const std::string& name) {
  if (name == "constant") return ScheduleKind::constant;
  if (name == "step") return ScheduleKind::step;
  if (name == "cosine") return ScheduleKind::cosine;
  LS_FAIL("unknown schedule '", name, "': expected constant, step or cosine");
}

const char* schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::constant: return "constant";
    case ScheduleKind::step: return "step";
    case ScheduleKind::cosine: return "cosine";
  }
  return "?";
}

}  // namespace lockstep
