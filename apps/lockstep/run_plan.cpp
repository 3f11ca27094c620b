#include "run_plan.h"

#include <algorithm>

namespace lockstep::app {

void set_run_control(TrainerConfig& config, const SettledRun& run) {
  config.epochs = run.plan.epoch_count;
  config.schedule.base_lr = run.plan.base_lr;
  config.schedule.step_epochs = std::max<double>(1.0, run.plan.epoch_count / 3.0);
  config.checkpoint_path = run.files.checkpoint_path;
  if (run.plan.wall_time_limit) config.time_limit_seconds = run.plan.wall_time_limit->seconds;
  config.best_path = run.files.best_path;
  config.early_stop = run.plan.early_stop_patience;
}

}  // namespace lockstep::app
