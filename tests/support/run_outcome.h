#pragma once
// What a replica-manager run ends with (its metrics per step, replica 0's
// parameters, momentum and running statistics), and the check that two runs
// ended bit-identical: for tests of changes that must not alter training
// (the planning pass, the next batch copied ahead).
#include <vector>

#include "distributed/replica_manager.h"

namespace lockstep::testing {

struct RunOutcome {
  std::vector<StepMetrics> metrics;
  std::vector<float> params, momentum, state;
  std::vector<float> exp_avg_sq;  // AdamW's second moment (empty under SGD)
  std::vector<float> ema, ema_state;  // the moving averages (empty without one)
};

// Replica 0's parameters, momentum and statistics, with the run's `metrics`.
RunOutcome outcome_of(ReplicaManager& manager, std::vector<StepMetrics> metrics);
// CHECKs every metric and every bit of the parameters, momentum and statistics.
void check_same_outcome(const RunOutcome& a, const RunOutcome& b);

}  // namespace lockstep::testing
