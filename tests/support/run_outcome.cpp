#include "support/run_outcome.h"

#include <catch2/catch.hpp>

#include <cstring>

namespace lockstep::testing {

namespace {
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // An empty vector's data() may be null, which memcmp must not be given (UBSan stops on it).
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
}  // namespace

RunOutcome outcome_of(ReplicaManager& manager, std::vector<StepMetrics> metrics) {
  RunOutcome out;
  out.metrics = std::move(metrics);
  Model& m = manager.model(0);
  out.params = m.arenas().params.to_vector();
  out.momentum = m.arenas().momentum.to_vector();
  if (m.arenas().exp_avg_sq.defined()) out.exp_avg_sq = m.arenas().exp_avg_sq.to_vector();
  if (m.arenas().ema.defined()) {
    out.ema = m.arenas().ema.to_vector();
    out.ema_state = m.arenas().ema_state.to_vector();
  }
  if (m.state_arena().defined() && m.state_arena().numel() > 0) out.state = m.state_arena().to_vector();
  return out;
}

void check_same_outcome(const RunOutcome& a, const RunOutcome& b) {
  REQUIRE(a.metrics.size() == b.metrics.size());
  for (size_t i = 0; i < a.metrics.size(); ++i) {
    INFO("step " << i);
    CHECK(a.metrics[i].count == b.metrics[i].count);
    CHECK(a.metrics[i].correct == b.metrics[i].correct);
    CHECK(a.metrics[i].loss_sum == b.metrics[i].loss_sum);
  }
  CHECK(same_bits(a.params, b.params));
  CHECK(same_bits(a.momentum, b.momentum));
  CHECK(same_bits(a.state, b.state));
  CHECK(same_bits(a.exp_avg_sq, b.exp_avg_sq));
  CHECK(same_bits(a.ema, b.ema));
  CHECK(same_bits(a.ema_state, b.ema_state));
}

}  // namespace lockstep::testing
