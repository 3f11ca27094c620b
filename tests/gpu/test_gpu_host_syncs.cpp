// A training step makes no host synchronisation before its end-of-step
// read-back (DESIGN, replica manager): on 1 and 2 devices, for simple-cnn and
// resnet18 (small inputs), and exactly one synchronisation per replica in
// all (the read-back). The first step is left out: its cuDNN algorithm
// searches (cudnnFind*) still wait for the device (issue 13, item 5: find
// the algorithms in a planning pass before the first collective). Only the emulated
// runtime can count host synchronisations, so this file is compiled in the
// emulated build only (a real-GPU build has no such test rather than a
// vacuous one).
#include <catch2/catch.hpp>

#if LOCKSTEP_EMULATED_GPU

#include <algorithm>
#include <cmath>

#include "distributed/replica_manager.h"
#include "emu_runtime.h"
#include "layers/models.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/host_syncs.h"

using namespace lockstep;

namespace {

// A batch in pinned memory, as the loader gives (a copy from pageable memory
// would itself make the host wait).
HostBatch pinned_batch(int64_t count, const Shape& sample, uint64_t seed) {
  HostBatch b;
  b.count = count;
  b.images = Tensor::empty_with(Shape{count, sample[0], sample[1], sample[2]}, pinned_host_allocator());
  for (int64_t i = 0; i < b.images.numel(); ++i)
    b.images.data()[i] = static_cast<float>(((i * 2654435761u + seed) % 1000) / 500.0 - 1.0);
  b.labels = Tensor::empty_with(Shape{count}, pinned_host_allocator(), DType::i32);
  for (int64_t i = 0; i < count; ++i) b.labels.labels()[i] = static_cast<int32_t>((seed + 3 * i) % 10);
  return b;
}

void check_no_host_syncs(const std::string& name, const Shape& sample, int devices) {
  INFO(name << " on " << devices << " emulated device(s)");
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
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    HostBatch batch = pinned_batch(6, sample, 11 + step);  // 6 over 2 replicas: 3 each
    const uint64_t before = manager.phase_times().host_syncs;
    const uint64_t all_before = emu::host_synchronizations();
    StepMetrics m = manager.train_step(batch, 0.01f, sgd);
    const uint64_t all = emu::host_synchronizations() - all_before;
    REQUIRE(emu::legacy_stream_calls() == legacy_before);
    REQUIRE(m.count == 6);
    REQUIRE(std::isfinite(m.loss_sum));
    if (step == 0) continue;
    REQUIRE(manager.phase_times().host_syncs - before == 0);
    // In all, the one read-back of each replica.
    REQUIRE(all == static_cast<uint64_t>(devices));
  }
  // Nor do the reads user code makes: a checkpoint's and the replicas' comparison.
  REQUIRE(manager.replicas_identical());
  REQUIRE(emu::legacy_stream_calls() == legacy_before);
}

}  // namespace

TEST_CASE("a training step waits for the device only at its end", "[gpu][host-syncs]") {
  REQUIRE(host_synchronizations_on_this_thread().has_value());
  const int devices = std::min(cuda_device_count(), 2);
  for (int n = 1; n <= devices; ++n) {
    check_no_host_syncs("simple-cnn", Shape{1, 12, 12}, n);
    check_no_host_syncs("resnet18", Shape{3, 8, 8}, n);
  }
}

#endif  // LOCKSTEP_EMULATED_GPU
