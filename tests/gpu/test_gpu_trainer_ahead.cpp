// The trainer holds two of the loader's batches (BatchSource::next's
// contract) and hands each step the next one, whose copy to the devices runs
// on the copy stream during the step. Over two epochs with a partial last
// batch it trains bit for bit as the same steps fed one batch at a time, and
// every step after an epoch's first found its batch already copied.
//
// The same holds for batches of bytes (LoaderConfig::augment_on_device,
// what lockstep train uses on GPUs): each replica's slice crosses as u8
// pixels and draws and is augmented on its GPU; the run ends bit for bit
// where the same run on the loader's own augmented float batches ends.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "data/loader.h"
#include "distributed/replica_manager.h"
#include "layers/models.h"
#include "runtime/device.h"
#include "support/replica_models.h"
#include "support/run_outcome.h"
#include "training/trainer.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

constexpr int64_t kSamples = 45, kBatch = 8, kEpochs = 2;  // 6 batches an epoch, the last of 5

std::shared_ptr<data::InMemoryDataset> patterned_set(int64_t channels = 1) {
  const int64_t sample = channels * 144;
  std::vector<uint8_t> pixels(kSamples * sample);
  std::vector<int32_t> labels(kSamples);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 37 + i / sample * 11) % 251);
  for (int64_t i = 0; i < kSamples; ++i) labels[i] = static_cast<int32_t>(i % 10);
  std::vector<std::string> names;
  for (int c = 0; c < 10; ++c) names.push_back("c" + std::to_string(c));
  return std::make_shared<data::InMemoryDataset>(Shape{channels, 12, 12}, pixels, labels, names, "patterned");
}

std::unique_ptr<ReplicaManager> make_manager(int devices, int64_t channels = 1, bool graphs = false,
                                             const std::string& model = "small-cnn") {
  ReplicaOptions options;
  options.bucket_bytes = 1024;
  options.cuda_graphs = graphs;
  // Compared bit for bit with another manager: the same cuDNN algorithms on both
  // (ContextOptions::deterministic), whatever a timed search would rank first.
  options.context.deterministic = true;
  return std::make_unique<ReplicaManager>(
      named_model(model, Shape{channels, 12, 12}, ModelOptions{.dropout = false}, 3), cuda_devices(devices),
      options);
}

data::LoaderConfig loader_config() {
  data::LoaderConfig c;
  c.batch_size = kBatch;
  c.threads = 2;
  c.seed = 9;
  return c;
}

TrainerConfig trainer_config() {
  TrainerConfig c;
  c.epochs = kEpochs;
  c.schedule.kind = ScheduleKind::cosine;
  c.schedule.base_lr = 0.05f;
  c.sgd = SgdConfig{0.9f, 1e-4f, false};
  return c;
}

}  // namespace

TEST_CASE("the trainer copies each next batch ahead and trains as batches fed one at a time",
          "[gpu][trainer][batch-ahead]") {
  auto set = patterned_set();
  const int most = std::min(cuda_device_count(), 2);
  for (int devices = 1; devices <= most; ++devices) {
    INFO(devices << " device(s)");
    // The trainer: each step is handed the next batch.
    auto trained = make_manager(devices);
    data::Loader loader(set, loader_config());
    std::vector<StepMetrics> trainer_metrics;
    std::vector<PhaseTimes> phases;
    Trainer trainer(*trained, loader, nullptr, trainer_config());
    trainer.on_step_metrics = [&](int64_t, const StepMetrics& m) { trainer_metrics.push_back(m); };
    trainer.on_epoch = [&](const EpochSummary& s) { phases.push_back(s.phases); };
    REQUIRE(trainer.run());
    REQUIRE(phases.size() == kEpochs);
    const int64_t batches = loader.batches_per_epoch();
    for (const PhaseTimes& p : phases) {
      CHECK(p.steps == batches);
      CHECK(p.batches_ahead == batches - 1);  // the first batch of an epoch is copied in its step
    }

    // The same steps, each batch copied in its own step.
    auto fed = make_manager(devices);
    data::Loader again(set, loader_config());
    LrSchedule schedule = trainer_config().schedule;
    schedule.total_epochs = kEpochs;
    std::vector<StepMetrics> fed_metrics;
    for (int64_t epoch = 0; epoch < kEpochs; ++epoch) {
      again.start_epoch(epoch, 0);
      HostBatch batch;
      for (int64_t b = 0; again.next(batch); ++b)
        fed_metrics.push_back(fed->train_step(batch, schedule.at(static_cast<double>(epoch) + double(b) / batches),
                                              trainer_config().sgd));
    }
    CHECK(fed->phase_times().batches_ahead == 0);
    check_same_outcome(outcome_of(*trained, trainer_metrics), outcome_of(*fed, fed_metrics));
  }
}

namespace {

// A trainer's run over the two epochs: its outcome and each epoch's phases.
struct Run {
  RunOutcome outcome;
  std::vector<PhaseTimes> phases;
  int64_t batches = 0;
};

Run train_with(const std::shared_ptr<data::InMemoryDataset>& set, int devices, bool graphs,
               const data::LoaderConfig& config, const std::string& model = "small-cnn") {
  auto manager = make_manager(devices, set->sample_shape()[0], graphs, model);
  data::Loader loader(set, config);
  Run run;
  std::vector<StepMetrics> metrics;
  Trainer trainer(*manager, loader, nullptr, trainer_config());
  trainer.on_step_metrics = [&](int64_t, const StepMetrics& m) { metrics.push_back(m); };
  trainer.on_epoch = [&](const EpochSummary& s) { run.phases.push_back(s.phases); };
  REQUIRE(trainer.run());
  run.batches = loader.batches_per_epoch();
  run.outcome = outcome_of(*manager, metrics);
  return run;
}

}  // namespace

TEST_CASE("gpu replicas trained on batches of bytes, augmented on their gpus, end as on the loader's float batches",
          "[gpu][trainer][batch-ahead][augment]") {
  auto set = patterned_set(3);
  const int most = std::min(cuda_device_count(), 2);
  for (int devices = 1; devices <= most; ++devices) {
    for (const bool resized : {false, true}) {
      // CUDA graphs with the padded crop only: the graph replays whatever
      // kernel filled its input buffer, and the resized crop's runs eagerly.
      for (const bool graphs : {false, true}) {
        if (resized && graphs) continue;
        INFO(devices << " device(s), " << (resized ? "random resized crop" : "padded crop") << ", "
                     << (graphs ? "CUDA graphs" : "eager"));
        data::LoaderConfig config = loader_config();
        config.augment.horizontal_flip = true;
        if (resized)
          config.augment.random_resized_crop = true;
        else
          config.augment.crop_padding = 2;
        const Run floats = train_with(set, devices, graphs, config);
        config.augment_on_device = true;
        const Run bytes = train_with(set, devices, graphs, config);
        REQUIRE(bytes.phases.size() == kEpochs);
        for (const PhaseTimes& p : bytes.phases) CHECK(p.batches_ahead == bytes.batches - 1);
        check_same_outcome(bytes.outcome, floats.outcome);
      }
    }
  }
}

// Mixup and CutMix (LoaderConfig::mix): the loader mixes the whole float
// batch and its labels become [count, 3] mixed targets, which the replicas
// stage ahead and a CUDA graph reads from its buffers (lam changes every
// batch). Graphs replay as eager steps run, bit for bit; 2 GPUs train as 1
// (the mlp, without batch norm, whose statistics would be each slice's); and
// the mixed run differs from the plain one.
TEST_CASE("gpu replicas train on mixed batches, with graphs as eagerly and on 2 gpus as on 1",
          "[gpu][trainer][batch-ahead][mixup]") {
  auto set = patterned_set(3);
  data::LoaderConfig config = loader_config();
  config.augment.crop_padding = 2;
  config.augment.horizontal_flip = true;
  const Run plain = train_with(set, 1, false, config);
  config.mix = data::MixConfig{0.8, 1.0, 0.9, 0.5};
  const Run eager = train_with(set, 1, false, config);
  const Run graphed = train_with(set, 1, true, config);
  check_same_outcome(graphed.outcome, eager.outcome);
  REQUIRE(eager.outcome.params.size() == plain.outcome.params.size());
  double largest_change = 0.0;
  for (size_t i = 0; i < plain.outcome.params.size(); ++i)
    largest_change = std::max(largest_change, double(std::abs(plain.outcome.params[i] - eager.outcome.params[i])));
  CHECK(largest_change > 1e-3);
  if (cuda_device_count() < 2) return;
  const Run one = train_with(set, 1, true, config, "mlp");
  const Run two = train_with(set, 2, true, config, "mlp");
  REQUIRE(two.outcome.params.size() == one.outcome.params.size());
  // Up to the order of sums, which 12 momentum steps carry to ~1e-3 of the
  // smallest weights (a pair split wrongly moves them by ~1e-2 in one step).
  for (size_t s = 0; s < one.outcome.metrics.size(); ++s) {
    INFO("step " << s);
    CHECK(two.outcome.metrics[s].loss_sum == Approx(one.outcome.metrics[s].loss_sum).epsilon(1e-4));
  }
  for (size_t i = 0; i < one.outcome.params.size(); ++i) {
    INFO("parameter " << i << ": " << two.outcome.params[i] << " vs " << one.outcome.params[i]);
    REQUIRE(std::abs(two.outcome.params[i] - one.outcome.params[i]) <= 1e-5 + 1e-3 * std::abs(one.outcome.params[i]));
  }
}
