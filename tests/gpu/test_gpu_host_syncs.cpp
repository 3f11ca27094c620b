// A training step makes no host synchronisation before its end-of-step
// read-back (docs/architecture.md, "The step"): on 1 and 2 devices, for
// simple-cnn and resnet18 (small inputs), simple-cnn also on batches of bytes
// augmented on the device (HostBatch::raw_pixels), and exactly one synchronisation per
// replica in all (the read-back). Each step's host launches (runtime/host_syncs.h)
// are counted, and the same from step to step. The first step on one device is left out: its cuDNN
// algorithm searches (cudnnFind*) wait for the device; on two the replica
// manager's planning pass searches before the step. Only the emulated
// runtime can count host synchronisations, so this file is compiled in the
// emulated build only (a real-GPU build has no such test rather than a
// vacuous one).
#include <catch2/catch.hpp>

#if LOCKSTEP_GPU_EMULATED

#include <algorithm>
#include <cmath>

#include "distributed/replica_manager.h"
#include "emu_runtime.h"
#include "layers/models.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/host_syncs.h"
#include "support/replica_models.h"

using namespace lockstep;
using lockstep::testing::pinned_batch;
using lockstep::testing::pinned_byte_batch;

namespace {

void check_no_host_syncs(const std::string& name, const Shape& sample, int devices, bool bytes = false) {
  INFO(name << " on " << devices << " emulated device(s)" << (bytes ? ", batches of bytes" : ""));
  // Nothing lockstep queues, from the replicas' creation on, names the legacy
  // default stream: every stream is non-blocking and every copy has one.
  const uint64_t legacy_before = emu::legacy_stream_calls();
  std::vector<Device> on;
  for (int d = 0; d < devices; ++d) on.push_back(Device::cuda(d));
  ReplicaManager manager(
      [&](Device device) -> std::unique_ptr<Model> {
        auto g = build_model(name, sample, 10, ModelOptions{.dropout = false});
        g->finalize(device, 7);
        return g;
      },
      on);
  const SgdConfig sgd{0.9f, 1e-4f, false};
  uint64_t steady_launches = 0;
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    // Pinned, as the loader's: a copy from pageable memory would itself wait.
    HostBatch batch = bytes ? pinned_byte_batch(6, sample, 11 + step)  // 6 over 2 replicas: 3 each
                            : pinned_batch(6, sample, 11 + step);
    const uint64_t before = manager.phase_times().host_syncs.value_or(0);
    const uint64_t launches_before = manager.phase_times().host_launches.value_or(0);
    const uint64_t all_before = emu::host_synchronizations();
    StepMetrics m = manager.train_step(batch, 0.01f, sgd);
    const uint64_t all = emu::host_synchronizations() - all_before;
    REQUIRE(emu::legacy_stream_calls() == legacy_before);
    REQUIRE(m.count == 6);
    REQUIRE(std::isfinite(m.loss_sum));
    // The first step on one device searches its cuDNN algorithms inside the
    // step; on two, the planning pass before it does (ReplicaOptions::plan_new_shapes).
    if (step == 0 && devices == 1) continue;
    REQUIRE(manager.phase_times().host_syncs.has_value());
    REQUIRE(*manager.phase_times().host_syncs - before == 0);
    // In all, the one read-back of each replica (after the planning pass).
    if (step > 0) REQUIRE(all == static_cast<uint64_t>(devices));
    // Every step after the first queues the same work from the host: its
    // launch count is counted and does not drift.
    REQUIRE(manager.phase_times().host_launches.has_value());
    const uint64_t launches = *manager.phase_times().host_launches - launches_before;
    REQUIRE(launches > 0);
    if (step == 1) steady_launches = launches;
    if (step > 1) REQUIRE(launches == steady_launches);
  }
  // Nor do the reads user code makes: a checkpoint's and the replicas' comparison.
  REQUIRE(manager.replicas_identical());
  REQUIRE(emu::legacy_stream_calls() == legacy_before);
}

}  // namespace

TEST_CASE("a training step waits for the device only at its end", "[gpu][host-syncs]") {
  REQUIRE(host_synchronizations_on_this_thread().has_value());
  REQUIRE(host_launches_on_this_thread().has_value());
  const int devices = std::min(cuda_device_count(), 2);
  for (int n = 1; n <= devices; ++n) {
    check_no_host_syncs("simple-cnn", Shape{1, 12, 12}, n);
    check_no_host_syncs("resnet18", Shape{3, 8, 8}, n);
    check_no_host_syncs("simple-cnn", Shape{1, 12, 12}, n, /*bytes=*/true);
  }
}

#endif  // LOCKSTEP_GPU_EMULATED
