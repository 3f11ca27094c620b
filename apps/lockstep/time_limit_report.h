#pragma once
// How `lockstep train` ends at its --time-limit: the test figures where it
// stopped, the curve, the per-class table, and the command that goes on.
#include "curve_drawer.h"
#include "data/loader.h"
#include "progress.h"
#include "run_plan.h"
#include "training/trainer.h"

namespace lockstep::app {

// Past the time limit (`plan.wall_time_limit` set): evaluates where training
// stopped (unless an epoch just ended and was evaluated), draws the curve,
// says how to go on. `last_test`: the last epoch's test figures (count 0:
// none). Returns the exit code, 0.
int finish_at_time_limit(const RunFiles& files, const RunPlan& plan, Trainer& trainer, data::Loader* test_loader,
                         const data::Dataset& train_set, ProgressReporter& reporter, CurveDrawer& curve,
                         Evaluation last_test);

}  // namespace lockstep::app
