// The CUDA-graph step (ReplicaOptions::cuda_graphs): replicas that capture
// a step into a graph and replay it train to bit-identical parameters,
// momentum, running statistics and metrics as replicas that queue every
// step eagerly, over steps with a learning rate that changes every step,
// dropout on (its draws depend on the step), the next batch copied ahead
// (the staging slots alternate), and a partial batch in the middle (eager,
// then captured again). A replayed step queues far fewer launches from the
// host than an eager one. Only the emulated runtime counts launches, so the
// counts are checked there; the equality holds in any GPU build.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "distributed/replica_manager.h"
#include "layers/models.h"
#include "runtime/device.h"
#include "runtime/host_syncs.h"
#include "support/replica_models.h"
#include "support/run_outcome.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

struct Outcome {
  RunOutcome run;
  PhaseTimes times;
  std::vector<uint64_t> launches;  // per step, replica 0's
};

// Global batch sizes per step: 6 four times (eager, capture, replay,
// replay), the partial 5 (eager), then 6 three times (eager, capture, replay).
const std::vector<int64_t> kCounts = {6, 6, 6, 6, 5, 6, 6, 6};

Outcome train_on(const std::string& name, const Shape& sample, const std::vector<Device>& devices, bool graphs,
                 bool memory_plan = true, MemoryFormat format = MemoryFormat::nchw,
                 Precision precision = ContextOptions{}.precision, Optimizer optimizer = Optimizer::sgd,
                 double ema_decay = 0.0) {
  ReplicaOptions options;
  options.context.memory_format = format;
  options.context.precision = precision;
  options.bucket_bytes = 1024;  // several buckets, so several all-reduces in the graph
  // Compared bit for bit with another manager: the same cuDNN algorithms on both
  // (ContextOptions::deterministic), whatever a timed search would rank first.
  options.context.deterministic = true;
  options.seed = 17;
  options.cuda_graphs = graphs;
  ReplicaManager manager(with_memory_planning(named_model(name, sample, ModelOptions{.dropout = true}, 5), memory_plan),
                         devices, options);
  std::vector<HostBatch> batches;
  for (int64_t count : kCounts) batches.push_back(pinned_batch(count, sample, 60 + batches.size()));
  SgdConfig sgd{0.9f, 1e-4f, false};
  sgd.optimizer = optimizer;
  sgd.ema_decay = ema_decay;
  manager.prepare_optimizer(sgd);
  Outcome out;
  std::vector<StepMetrics> metrics;
  for (size_t s = 0; s < batches.size(); ++s) {
    const uint64_t before = manager.phase_times().host_launches.value_or(0);
    // A schedule that changes every step (AdamW's steps are some 1/lr larger than SGD's).
    const float lr = (optimizer == Optimizer::adamw ? 1e-3f : 0.05f) / static_cast<float>(s + 1);
    const HostBatch* next = s + 1 < batches.size() ? &batches[s + 1] : nullptr;
    metrics.push_back(manager.train_step(batches[s], lr, sgd, next));
    out.launches.push_back(manager.phase_times().host_launches.value_or(0) - before);
  }
  REQUIRE(manager.replicas_identical());
  out.times = manager.phase_times();
  out.run = outcome_of(manager, std::move(metrics));
  return out;
}

Outcome train(const std::string& name, const Shape& sample, int devices, bool graphs, bool memory_plan = true,
              MemoryFormat format = MemoryFormat::nchw, Precision precision = ContextOptions{}.precision,
              Optimizer optimizer = Optimizer::sgd, double ema_decay = 0.0) {
  return train_on(name, sample, cuda_devices(devices), graphs, memory_plan, format, precision, optimizer, ema_decay);
}

// Trains `name` eagerly and from graphs on `devices` emulated or real GPUs
// and checks the two runs agree bit for bit, and (where counted) that a
// replayed step launches far fewer pieces of work from the host.
void check_graph_equals_eager(const std::string& name, const Shape& sample, int devices) {
  INFO(name << " on " << devices << " device(s)");
  Outcome eager = train(name, sample, devices, false);
  Outcome graph = train(name, sample, devices, true);
  check_same_outcome(graph.run, eager.run);
  CHECK(eager.times.graph_steps == 0);
  // Steps 1, 2, 3, 6 and 7 launch a graph; 1 and 6 capture it first.
  CHECK(graph.times.graph_steps == 5);
  CHECK(graph.times.graph_captures == 2);
  if (!host_launches_on_this_thread()) return;
  // Step 3 replays; the eager run's step 3 queues every kernel itself.
  const uint64_t replayed = graph.launches[3], queued = eager.launches[3];
  WARN(name << " " << sample.str() << " batch " << kCounts[3] << " on " << devices
            << " emulated device(s): host launches per step, eager " << queued << ", graph " << replayed);
  CHECK(replayed > 0);
  CHECK(replayed * 3 < queued);
  // Replays, and eager steps, repeat the same launches (steps 2 and 3 both
  // copy the next batch ahead).
  CHECK(graph.launches[2] == replayed);
  CHECK(eager.launches[2] == queued);
}

}  // namespace

TEST_CASE("replicas replaying steps from a CUDA graph train as eager replicas, bit for bit",
          "[gpu][replica][cuda-graph]") {
  const int most = std::min(cuda_device_count(), 2);
  for (int devices = 1; devices <= most; ++devices) {
    check_graph_equals_eager("simple-cnn", Shape{1, 12, 12}, devices);  // dropout
    check_graph_equals_eager("small-cnn", Shape{1, 12, 12}, devices);   // dropout and batch norm
  }
}

// AdamW's step count t reaches a replayed graph through device memory, as the
// learning rate does: a graph that kept the captured step's t would take
// other bias corrections than the eager run from its second replay on.
TEST_CASE("adamw replayed from a CUDA graph trains as eager replicas, bit for bit", "[gpu][replica][cuda-graph][adamw]") {
  const int most = std::min(cuda_device_count(), 2);
  for (int devices = 1; devices <= most; ++devices) {
    INFO(devices << " device(s)");
    const Outcome eager = train("small-cnn", Shape{1, 12, 12}, devices, false, true, MemoryFormat::nchw,
                                ContextOptions{}.precision, Optimizer::adamw);
    const Outcome graph = train("small-cnn", Shape{1, 12, 12}, devices, true, true, MemoryFormat::nchw,
                                ContextOptions{}.precision, Optimizer::adamw);
    REQUIRE_FALSE(eager.run.exp_avg_sq.empty());
    check_same_outcome(graph.run, eager.run);
    CHECK(graph.times.graph_steps == 5);
  }
}

// --ema's step reaches a replayed graph through device memory too, for the
// weights' average in the optimizer's pass and the statistics' after their
// combination: a graph that kept the captured step's would leave the warm-up
// (decay 0.7 caps it from step 6 on) at that step. SGD and AdamW, fp32 and bf16.
TEST_CASE("the moving average replayed from a CUDA graph equals the eager run's, bit for bit",
          "[gpu][replica][cuda-graph][ema]") {
  const int most = std::min(cuda_device_count(), 2);
  const Optimizer optimizer = GENERATE(Optimizer::sgd, Optimizer::adamw);
  const Precision precision = GENERATE(Precision::fp32, Precision::bf16);
  for (int devices = 1; devices <= most; ++devices) {
    INFO(devices << " device(s), " << (optimizer == Optimizer::adamw ? "adamw" : "sgd") << ", "
                 << precision_name(precision));
    const Outcome eager =
        train("small-cnn", Shape{1, 12, 12}, devices, false, true, MemoryFormat::nchw, precision, optimizer, 0.7);
    const Outcome graph =
        train("small-cnn", Shape{1, 12, 12}, devices, true, true, MemoryFormat::nchw, precision, optimizer, 0.7);
    REQUIRE(eager.run.ema.size() == eager.run.params.size());
    REQUIRE_FALSE(eager.run.ema_state.empty());
    // The average moved off the weights (decay > 0 after the first step).
    REQUIRE(eager.run.ema != eager.run.params);
    check_same_outcome(graph.run, eager.run);
    CHECK(graph.times.graph_steps == 5);
  }
}

// Replicas sharing a GPU sum their gradients through the local communicator,
// which waits for the device on the host inside the step: no capture can
// hold that (a real H200 refused it with cudaErrorStreamCaptureUnsupported),
// so asking for graphs there leaves every step eager, and equal.
TEST_CASE("replicas sharing a gpu asked for CUDA graphs run every step eagerly", "[gpu][replica][cuda-graph]") {
  const std::vector<Device> shared(2, Device::cuda(0));
  Outcome asked = train_on("small-cnn", Shape{1, 12, 12}, shared, true);
  Outcome eager = train_on("small-cnn", Shape{1, 12, 12}, shared, false);
  check_same_outcome(asked.run, eager.run);
  CHECK(asked.times.graph_steps == 0);
  CHECK(asked.times.graph_captures == 0);
}

TEST_CASE("resnet18 replicas replaying a step from a CUDA graph", "[gpu][replica][cuda-graph]") {
  // Small images: what is launched per step does not depend on their size.
  check_graph_equals_eager("resnet18", Shape{3, 8, 8}, 1);
}

TEST_CASE("a CUDA-graph step on the memory plan trains as an eager step with a buffer per value, bit for bit",
          "[gpu][replica][cuda-graph][memory-plan]") {
  // The replay reads and writes the plan's shared buffer at the addresses of
  // its capture; a partial batch in between runs at the same offsets.
  const int most = std::min(cuda_device_count(), 2);
  for (int devices = 1; devices <= most; ++devices)
    for (const char* name : {"simple-cnn", "resnet20"}) {
      const Shape sample = std::string(name) == "resnet20" ? Shape{3, 8, 8} : Shape{1, 12, 12};
      INFO(name << " on " << devices << " device(s)");
      Outcome planned_graph = train(name, sample, devices, true, true);
      Outcome unplanned_eager = train(name, sample, devices, false, false);
      check_same_outcome(planned_graph.run, unplanned_eager.run);
      CHECK(planned_graph.times.graph_steps == 5);
    }
}

// The captured step holds the input's conversion, the KRSC filter copies
// and their gradients' transposes back, and flatten's transposes
// (simple-cnn, with dropout after it) or its alias of the pooled [C, 1, 1]
// (resnet20). resnet20 on one device only (~12 s emulated; two take 24 s):
// what a second replica adds, the all-reduce, does not see the format, and
// simple-cnn runs on two.
static void check_nhwc_graph_equals_eager(const char* name, const Shape& sample, int most_devices) {
  const int most = std::min(cuda_device_count(), most_devices);
  for (int devices = 1; devices <= most; ++devices) {
    INFO(name << " in nhwc on " << devices << " device(s)");
    Outcome graph = train(name, sample, devices, true, true, MemoryFormat::nhwc);
    Outcome eager = train(name, sample, devices, false, true, MemoryFormat::nhwc);
    check_same_outcome(graph.run, eager.run);
    CHECK(graph.times.graph_steps == 5);
  }
}

TEST_CASE("a CUDA-graph step of simple-cnn in nhwc trains as an eager nhwc step, bit for bit",
          "[gpu][replica][cuda-graph][nhwc]") {
  check_nhwc_graph_equals_eager("simple-cnn", Shape{1, 12, 12}, 2);
}

TEST_CASE("a CUDA-graph step of resnet20 in nhwc trains as an eager nhwc step, bit for bit",
          "[gpu][replica][cuda-graph][nhwc]") {
  check_nhwc_graph_equals_eager("resnet20", Shape{3, 8, 8}, 1);
}

// Precision bf16: bf16 activations, the input converted and the bf16 weight
// copy written by the fused SGD inside the captured step.
TEST_CASE("a CUDA-graph step in bf16 trains as an eager bf16 step, bit for bit",
          "[gpu][replica][cuda-graph][bf16]") {
  const auto check = [](const std::string& name, const Shape& sample, int devices, MemoryFormat format) {
    INFO(name << " in bf16, " << memory_format_name(format) << ", on " << devices << " device(s)");
    Outcome graph = train(name, sample, devices, true, true, format, Precision::bf16);
    Outcome eager = train(name, sample, devices, false, true, format, Precision::bf16);
    check_same_outcome(graph.run, eager.run);
    CHECK(graph.times.graph_steps == 5);
  };
  check("simple-cnn", Shape{1, 12, 12}, std::min(cuda_device_count(), 2), MemoryFormat::nchw);
  check("resnet20", Shape{3, 8, 8}, 1, MemoryFormat::nhwc);
}
