// The trainer loop on a small synthetic data set: epochs and callbacks,
// checkpoints, stop from another thread, a diverging loss, and two trainers
// running side by side in one process.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include "data/loader.h"
#include "base/error.h"
#include "training/trainer.h"
#include "layers/models.h"
#include "test_data_util.h"
#include "support/wrapped_dataset.h"

using namespace lockstep;

namespace {

// 4 classes of 1x8x8 images: each class a bright quadrant, plus noise.
std::shared_ptr<const data::Dataset> quadrants(int64_t count, uint64_t seed) {
  std::mt19937 gen(static_cast<uint32_t>(seed));
  std::uniform_int_distribution<int> noise(0, 60);
  std::vector<uint8_t> pixels(count * 64);
  std::vector<int32_t> labels(count);
  for (int64_t i = 0; i < count; ++i) {
    int32_t label = static_cast<int32_t>(i % 4);
    labels[i] = label;
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x) {
        bool lit = (y / 4) * 2 + (x / 4) == label;
        pixels[i * 64 + y * 8 + x] = static_cast<uint8_t>((lit ? 180 : 0) + noise(gen));
      }
  }
  return std::make_shared<data::InMemoryDataset>(Shape{1, 8, 8}, pixels, labels,
                                                 std::vector<std::string>{"a", "b", "c", "d"}, "quadrants");
}

struct Run {
  std::vector<double> losses;
  std::vector<EpochSummary> epochs;
  bool finished = false;
};

// Trains mlp on the quadrants for `epochs` epochs; `tweak` may change the trainer before it runs.
Run train(int64_t epochs, float lr, const std::string& checkpoint = "",
          const std::function<void(Trainer&)>& tweak = {}, const std::string& model = "mlp",
          const std::function<void(ReplicaManager&)>& tweak_replicas = {}) {
  data::LoaderConfig lc;
  lc.batch_size = 16;
  lc.seed = 3;
  data::Loader loader(quadrants(160, 1), lc);
  auto test = data::make_eval_loader(quadrants(40, 2), 16, loader.normalization(), 1);
  std::string spec = model_spec(model, loader.sample_shape(), 4, {.dropout = false});
  ReplicaManager replicas([&](Device d) -> std::unique_ptr<Model> { return build_model_from_spec(spec, d, 5); },
                          {Device::cpu()});
  if (tweak_replicas) tweak_replicas(replicas);
  TrainerConfig config;
  config.epochs = epochs;
  config.schedule.base_lr = lr;
  config.checkpoint_path = checkpoint;
  Trainer trainer(replicas, loader, test.get(), config);
  Run run;
  trainer.on_step = [&](int64_t, double loss) { run.losses.push_back(loss); };
  trainer.on_epoch = [&](const EpochSummary& e) { run.epochs.push_back(e); };
  if (tweak) tweak(trainer);
  run.finished = trainer.run();
  return run;
}

}  // namespace

TEST_CASE("the trainer runs its epochs, reports them and learns", "[trainer]") {
  Run run = train(3, 0.05f);
  REQUIRE(run.finished);
  REQUIRE(run.losses.size() == 30);
  REQUIRE(run.epochs.size() == 3);
  for (const EpochSummary& e : run.epochs) REQUIRE(e.phases.steps == 10);  // each epoch's own phases
  REQUIRE(run.epochs[2].has_test);
  REQUIRE(run.epochs[2].test.count == 40);
  REQUIRE(run.epochs[2].train_loss < run.epochs[0].train_loss);
  REQUIRE(run.epochs[2].test.accuracy > 0.9);
}

TEST_CASE("a stop request from another thread ends the run after the step, with a checkpoint", "[trainer]") {
  data_test::TempDir dir;
  std::string ck = dir / "ck.safetensors";
  Run run = train(3, 0.05f, ck, [](Trainer& t) {
    t.on_step = [&t](int64_t step, double) {
      if (step == 13) std::thread([&t] { t.request_stop(); }).join();
    };
  });
  REQUIRE_FALSE(run.finished);
  CheckpointInfo info = read_checkpoint_info(ck);
  REQUIRE(info.step == 13);
  REQUIRE(info.epoch == 1);
  REQUIRE(info.batch_in_epoch == 3);
}

TEST_CASE("a loss that stops being finite ends training and keeps the last good checkpoint", "[trainer]") {
  data_test::TempDir dir;
  std::string ck = dir / "ck.safetensors";
  train(1, 0.05f, ck);  // one good epoch
  auto before = std::filesystem::file_size(ck);
  std::ifstream in(ck, std::ios::binary);
  std::string good((std::istreambuf_iterator<char>(in)), {});
  // Resume it with an absurd learning rate: the loss overflows within the epoch.
  auto diverge = [&] {
    train(3, 1e30f, ck, [&](Trainer& t) { t.resume(read_checkpoint(ck), ck); });
  };
  REQUIRE_THROWS_WITH(diverge(), Catch::Contains("the loss became") && Catch::Contains("last good checkpoint"));
  REQUIRE(std::filesystem::file_size(ck) == before);
  std::ifstream again(ck, std::ios::binary);
  REQUIRE(std::string((std::istreambuf_iterator<char>(again)), {}) == good);
}

TEST_CASE("a run that diverges before its first checkpoint says none was written", "[trainer]") {
  data_test::TempDir dir;
  std::string ck = dir / "ck.safetensors";
  REQUIRE_THROWS_WITH(train(1, 1e30f, ck),
                      Catch::Contains("the loss became") && Catch::Contains("no checkpoint was written") &&
                          !Catch::Contains("last good checkpoint"));
  REQUIRE_FALSE(std::filesystem::exists(ck));
}

TEST_CASE("running statistics that are not usable are never saved, named by tensor", "[trainer]") {
  // Training normalises by each batch's own statistics, so a NaN running
  // mean or a negative running variance never shows in the loss: before,
  // they were saved, and eval and predict ran on them.
  for (const auto& [which, value, said] :
       {std::tuple<std::string, float, std::string>{"running_mean", std::nanf(""), "holds NaN"},
        {"running_var", -1e30f, "holds a negative variance"}}) {
    DYNAMIC_SECTION(which) {
      data_test::TempDir dir;
      const std::string ck = dir / "ck.safetensors";
      auto poison = [&, which = which, value = value](ReplicaManager& replicas) {
        Model& model = replicas.model(0);
        for (const ParamEntry& e : model.state_entries()) {
          if (e.name.size() < which.size() || e.name.compare(e.name.size() - which.size(), which.size(), which) != 0)
            continue;
          std::vector<float> values = model.state_arena().view(e.offset, e.shape).to_vector();
          values[0] = value;
          model.state_arena().view(e.offset, e.shape).copy_from(Tensor::from_vector(e.shape, values));
          return;
        }
        FAIL("no " << which << " in the model");
      };
      REQUIRE_THROWS_WITH(train(1, 0.05f, ck, {}, "small-cnn", poison),
                          Catch::Contains("the running statistics are no longer usable after step 10") &&
                              Catch::Contains("." + which + " " + said) && Catch::Contains("no checkpoint was written"));
      REQUIRE_FALSE(std::filesystem::exists(ck));
    }
  }
}

TEST_CASE("two trainers on two threads give the results each gives alone", "[trainer]") {
  Run alone = train(2, 0.05f);
  Run a, b;
  std::thread ta([&] { a = train(2, 0.05f); });
  std::thread tb([&] { b = train(2, 0.05f); });
  ta.join();
  tb.join();
  REQUIRE(a.losses == alone.losses);
  REQUIRE(b.losses == alone.losses);
}

TEST_CASE("an epoch's summary counts the time the step loop waited for its loader", "[trainer]") {
  // A data set that takes 10 ms a sample, read by one loader thread, for a
  // model that steps in well under that: the epoch is mostly waiting, and at
  // least the reads that cannot overlap a step are counted. 32 samples, two
  // batches: 320 ms of reading, of which the loader may read ahead at most
  // what happens before the epoch's clock starts.
  struct SlowReads : testing::WrappedDataset {
    using WrappedDataset::WrappedDataset;
    void read_pixels(int64_t index, uint8_t* out) const override {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      inner_->read_pixels(index, out);
    }
    bool in_memory() const override { return false; }
  };
  data::LoaderConfig lc;
  lc.batch_size = 16;
  lc.threads = 1;
  lc.seed = 3;
  data::Loader loader(std::make_shared<SlowReads>(quadrants(32, 1)), lc);
  ReplicaManager replicas(
      [&](Device d) -> std::unique_ptr<Model> {
        return build_model_from_spec(model_spec("mlp", loader.sample_shape(), 4, {.dropout = false}), d, 5);
      },
      {Device::cpu()});
  TrainerConfig config;
  config.epochs = 2;
  Trainer trainer(replicas, loader, nullptr, config);
  std::vector<EpochSummary> epochs;
  trainer.on_epoch = [&](const EpochSummary& e) { epochs.push_back(e); };
  REQUIRE(trainer.run());
  REQUIRE(epochs.size() == 2);
  for (const EpochSummary& e : epochs) {
    INFO("epoch " << e.epoch << ": waited " << e.data_wait_seconds << " s of " << e.seconds << " s");
    CHECK(e.data_wait_seconds <= e.seconds);
    CHECK(e.data_wait_seconds >= 0.16);  // half the reading, whatever ran ahead of the clock
  }
}
