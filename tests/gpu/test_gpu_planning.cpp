// The replica manager's planning pass (ReplicaOptions::plan_new_shapes): no
// replica calls cudaMalloc, cudaFree or a pinned allocation while any
// collective is in flight, through a 2-device run whose batch sizes change
// (the first step, a partial last batch, evaluation in between), for a model
// without batch norm, one with it, and two with synchronised batch norm
// (collectives in forward; resnet20's residual adds); and the rehearsal changes nothing: parameters,
// momentum, running statistics and metrics are bit-identical to a run
// without it. Only the emulated runtime counts the allocations (it sees
// every collective and every allocation call), so this file is compiled in
// the emulated build only.
#include <catch2/catch.hpp>

#if LOCKSTEP_GPU_EMULATED

#include <string>
#include <vector>

#include "distributed/replica_manager.h"
#include "emu_runtime.h"
#include "layers/models.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "support/replica_models.h"
#include "support/run_outcome.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

struct RunResult {
  RunOutcome outcome;
  uint64_t allocations_during_collectives = 0;
};

// Batches of 6, then a partial 5, an evaluation of 5, and 6, 5 again, on
// two emulated devices with small buckets (several collectives per step).
RunResult run(const std::string& name, const Shape& sample, bool plan, bool sync_bn) {
  ReplicaOptions options;
  options.bucket_bytes = 1024;
  // Compared bit for bit with another manager: the same cuDNN algorithms on both
  // (ContextOptions::deterministic), whatever a timed search would rank first.
  options.context.deterministic = true;
  options.plan_new_shapes = plan;
  options.context.sync_batch_norm = sync_bn;
  ReplicaManager manager(
      [&](Device device) -> std::unique_ptr<Model> {
        auto g = build_model(name, sample, 10, ModelOptions{.dropout = false});
        g->finalize(device, 7);
        return g;
      },
      {Device::cuda(0), Device::cuda(1)}, options);
  const SgdConfig sgd{0.9f, 1e-4f, false};
  RunResult out;
  const uint64_t before = emu::allocations_during_collectives();
  uint64_t seed = 11;
  std::vector<StepMetrics> metrics;
  for (int64_t count : {6, 5, -5, 6, 5}) {
    if (count < 0) {
      metrics.push_back(manager.evaluate(pinned_batch(-count, sample, seed++)));
      continue;
    }
    metrics.push_back(manager.train_step(pinned_batch(count, sample, seed++), 0.01f, sgd));
  }
  out.allocations_during_collectives = emu::allocations_during_collectives() - before;
  REQUIRE(manager.replicas_identical());
  out.outcome = outcome_of(manager, std::move(metrics));
  return out;
}

void check_planned(const std::string& name, const Shape& sample, bool sync_bn) {
  INFO(name << (sync_bn ? " with synchronised batch norm" : ""));
  RunResult planned = run(name, sample, true, sync_bn);
  CHECK(planned.allocations_during_collectives == 0);
  // Without the rehearsal the first step allocates while collectives are in
  // flight (reported, not asserted: how many depends on the scheduling), and
  // the rehearsal changes no result.
  RunResult unplanned = run(name, sample, false, sync_bn);
  WARN(name << (sync_bn ? " (sync-bn)" : "") << ": " << unplanned.allocations_during_collectives
            << " allocation calls during collectives without the planning pass, "
            << planned.allocations_during_collectives << " with it");
  check_same_outcome(planned.outcome, unplanned.outcome);
}

}  // namespace

TEST_CASE("no replica allocates while a collective is in flight", "[gpu][planning][replica]") {
  if (cuda_device_count() < 2) {
    WARN("needs 2 emulated devices (LOCKSTEP_EMU_DEVICES); skipped");
    return;
  }
  check_planned("simple-cnn", Shape{1, 12, 12}, false);
  check_planned("small-cnn", Shape{1, 12, 12}, false);
  check_planned("small-cnn", Shape{1, 12, 12}, true);
  check_planned("resnet20", Shape{3, 8, 8}, true);
}

#endif  // LOCKSTEP_GPU_EMULATED
