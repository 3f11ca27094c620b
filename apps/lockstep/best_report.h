#pragma once
// What `lockstep train` says of --keep-best and --early-stop: a line (and a
// metrics line) when an epoch beats the best test accuracy, and how the run
// ended when early stopping ended it.
#include "progress.h"
#include "run_plan.h"
#include "training/best_score.h"

namespace lockstep::app {

// After epoch best.epoch beat every earlier one: where its checkpoint went,
// when kept. Metrics: {"type": "best", "epoch", "test_accuracy", "checkpoint"}.
void report_best(const RunFiles& files, const BestScore& best, ProgressReporter& reporter);

// The run stopped (or, resumed, did not start) because the plan's
// early_stop_patience epochs in a row did not beat epoch best.epoch: which
// epoch was best, its score, and where its checkpoint is. `completed`: the
// epochs done. Metrics: {"type": "early_stop", "epoch", "best_epoch",
// "best_test_accuracy", "best_checkpoint" (null: not kept)}.
void report_early_stop(const RunFiles& files, const RunPlan& plan, const BestScore& best, int64_t completed,
                       bool resumed_stopped, ProgressReporter& reporter);

}  // namespace lockstep::app
