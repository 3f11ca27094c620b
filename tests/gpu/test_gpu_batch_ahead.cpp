// The next batch's host-to-device copy queued ahead (ReplicaManager::
// train_step's `next`): on the copy stream during the step before, ordered
// before the compute stream by an event. Replicas train to bit-identical
// parameters, momentum, statistics and metrics with and without it, the
// copies ahead are used (and a following step on another batch copies its
// own), and in the emulated build a step still makes no host
// synchronisation before its read-back, no legacy-stream call and no
// allocation while a collective is in flight.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "distributed/replica_manager.h"
#include "layers/models.h"
#include "runtime/device.h"
#include "support/replica_models.h"
#include "support/run_outcome.h"

#if LOCKSTEP_GPU_EMULATED
#include "emu_runtime.h"
#endif

using namespace lockstep;
using namespace lockstep::testing;

namespace {

struct Outcome {
  RunOutcome run;
  PhaseTimes times;
};

// Steps on batches 0, 1, 2 (partial) and 4, with `ahead` each naming the
// batch after it (2 names 3, which the next step does not take).
Outcome train(const std::string& name, const Shape& sample, int devices, bool ahead) {
  ReplicaOptions options;
  options.bucket_bytes = 1024;
  // Compared bit for bit with another manager: the same cuDNN algorithms on both
  // (ContextOptions::deterministic), whatever a timed search would rank first.
  options.context.deterministic = true;
  ReplicaManager manager(named_model(name, sample, ModelOptions{.dropout = false}, 3),
                         cuda_devices(devices), options);
  std::vector<HostBatch> batches;
  for (int64_t count : {6, 6, 5, 6, 6}) batches.push_back(pinned_batch(count, sample, 40 + batches.size()));
  const SgdConfig sgd{0.9f, 1e-4f, false};
  const std::vector<std::pair<int, int>> steps = {{0, 1}, {1, 2}, {2, 3}, {4, -1}};
  std::vector<StepMetrics> metrics;
  for (auto [b, n] : steps)
    metrics.push_back(manager.train_step(batches[b], 0.02f, sgd, ahead && n >= 0 ? &batches[n] : nullptr));
  REQUIRE(manager.replicas_identical());
  return {outcome_of(manager, std::move(metrics)), manager.phase_times()};
}

}  // namespace

TEST_CASE("the next batch copied ahead trains as the batch copied in its step", "[gpu][replica][batch-ahead]") {
  const int most = std::min(cuda_device_count(), 2);
  for (int devices = 1; devices <= most; ++devices) {
    for (const auto& [name, sample] : {std::pair{std::string("simple-cnn"), Shape{1, 12, 12}},
                                      std::pair{std::string("small-cnn"), Shape{1, 12, 12}}}) {
      INFO(name << " on " << devices << " device(s)");
#if LOCKSTEP_GPU_EMULATED
      const uint64_t legacy = emu::legacy_stream_calls();
      const uint64_t during = emu::allocations_during_collectives();
#endif
      Outcome with = train(name, sample, devices, true);
#if LOCKSTEP_GPU_EMULATED
      CHECK(emu::legacy_stream_calls() == legacy);
      CHECK(emu::allocations_during_collectives() == during);
      // Waits for the device only at each step's read-back (one device
      // searches cuDNN's algorithms inside its first step; two, before it).
      if (devices > 1) CHECK(with.times.host_syncs == 0);
#endif
      Outcome without = train(name, sample, devices, false);
      // Batches 1 and 2 were copied ahead; 4 was not (3 was named instead).
      CHECK(with.times.batches_ahead == 2);
      CHECK(without.times.batches_ahead == 0);
      check_same_outcome(with.run, without.run);
    }
  }
}
