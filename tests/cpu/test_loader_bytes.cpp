// Batches of bytes (LoaderConfig::augment_on_device): the loader hands out
// each sample's decoded pixels and draw, and augmenting them where the batch
// is trained (ops::augment_images) gives, bit for bit, the floats a loader
// that augments on its own threads hands out. Replicas train on such a batch
// as on the float batch.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/loader.h"
#include "distributed/replica_manager.h"
#include "layers/models.h"
#include "ops/augment.h"
#include "runtime/context.h"
#include "support/replica_models.h"
#include "support/run_outcome.h"
#include "support/wrapped_dataset.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

constexpr int64_t kSamples = 37;

// Samples of [3, 10, 12] with every byte value used, labels index % 4.
std::shared_ptr<data::InMemoryDataset> patterned_set() {
  const Shape shape{3, 10, 12};
  std::vector<uint8_t> pixels(static_cast<size_t>(kSamples * shape.numel()));
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 53 + i / 360 * 17) % 256);
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < kSamples; ++i) labels.push_back(static_cast<int32_t>(i % 4));
  return std::make_shared<data::InMemoryDataset>(shape, pixels, labels, std::vector<std::string>{"a", "b", "c", "d"},
                                                 "patterned");
}

// Samples 5 and 11 cannot be read, as a corrupt image in a folder.
class DamagedSet final : public WrappedDataset {
public:
  using WrappedDataset::WrappedDataset;
  void read_pixels(int64_t i, uint8_t* out) const override {
    if (i == 5 || i == 11) throw Error("damaged sample " + std::to_string(i));
    inner_->read_pixels(i, out);
  }
};

struct Variant {
  const char* name;
  data::AugmentConfig augment;
  bool normalize;
};

std::vector<Variant> variants() {
  data::AugmentConfig crop_flip;
  crop_flip.crop_padding = 3;
  crop_flip.horizontal_flip = true;
  data::AugmentConfig resized;
  resized.random_resized_crop = true;
  resized.horizontal_flip = true;
  data::AugmentConfig trivial = crop_flip;
  trivial.trivial = true;
  return {{"crop and flip, normalised", crop_flip, true},
          {"crop, flip and TrivialAugment, normalised", trivial, true},
          {"random resized crop, not normalised", resized, false},
          {"no augmentation, normalised", data::AugmentConfig{}, true}};
}

data::LoaderConfig config(const Variant& v, bool on_device, bool skip_bad) {
  data::LoaderConfig c;
  c.batch_size = 8;  // 5 batches, the last of 5 (of 3 with the two bad samples)
  c.threads = 3;
  c.seed = 21;
  c.augment = v.augment;
  c.normalize = v.normalize;
  c.augment_on_device = on_device;
  c.skip_bad_images = skip_bad;
  return c;
}

// The batch's images as the f32 a step takes: augmented on the CPU when they are bytes.
std::vector<float> trained_images(const HostBatch& batch) {
  if (!batch.raw_pixels()) return batch.images.to_vector();
  Context ctx(Device::cpu());
  Tensor out = Tensor::empty(batch.images.shape());
  ops::augment_images(ctx, batch.images, batch.draws, batch.crop_padding, batch.mean, batch.stddev, out);
  return out.to_vector();
}

std::vector<int32_t> labels_of(const HostBatch& batch) { return batch.labels.to_label_vector(); }

}  // namespace

TEST_CASE("batches of bytes augmented where they are trained equal the loader's own augmented batches, bit for bit",
          "[data][loader][augment]") {
  for (const bool skip_bad : {false, true}) {
    std::shared_ptr<const data::Dataset> set = patterned_set();
    if (skip_bad) set = std::make_shared<DamagedSet>(set);
    for (const Variant& v : variants()) {
      INFO(v.name << (skip_bad ? ", two samples skipped" : ""));
      data::Loader floats(set, config(v, false, skip_bad)), bytes(set, config(v, true, skip_bad));
      for (int64_t epoch = 0; epoch < 2; ++epoch) {
        floats.start_epoch(epoch, 0);
        bytes.start_epoch(epoch, 0);
        HostBatch f, b;
        int64_t batches = 0, samples = 0;
        while (floats.next(f)) {
          INFO("epoch " << epoch << ", batch " << batches);
          REQUIRE(bytes.next(b));
          REQUIRE_FALSE(f.raw_pixels());
          REQUIRE(b.raw_pixels());
          REQUIRE(b.count == f.count);
          REQUIRE(b.images.shape() == f.images.shape());
          REQUIRE(b.draws.dim(0) == b.count);
          CHECK(labels_of(b) == labels_of(f));
          const std::vector<float> want = f.images.to_vector(), got = trained_images(b);
          REQUIRE(got.size() == want.size());
          CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
          ++batches;
          samples += f.count;
        }
        CHECK_FALSE(bytes.next(b));
        CHECK(samples == kSamples - (skip_bad ? 2 : 0));
      }
      CHECK(floats.normalization().mean == bytes.normalization().mean);
    }
  }
}

TEST_CASE("replicas on the cpu train on a batch of bytes as on the loader's float batch", "[data][loader][replica]") {
  std::shared_ptr<const data::Dataset> set = patterned_set();
  const Variant v = variants()[0];
  auto run = [&](bool on_device) {
    ReplicaOptions options;
    options.bucket_bytes = 512;
    ReplicaManager manager(named_model("small-cnn", Shape{3, 10, 12}, ModelOptions{.dropout = false}, 4),
                           {Device::cpu(), Device::cpu()}, options);
    data::Loader loader(set, config(v, on_device, false));
    std::vector<StepMetrics> metrics;
    loader.start_epoch(0, 0);
    HostBatch batch;
    while (loader.next(batch)) {
      metrics.push_back(manager.train_step(batch, 0.05f, SgdConfig{0.9f, 1e-4f, false}));
      metrics.push_back(manager.evaluate(batch));
    }
    return outcome_of(manager, metrics);
  };
  check_same_outcome(run(true), run(false));
}

TEST_CASE("a batch of bytes without its draws is refused before any replica runs", "[data][loader][replica]") {
  ReplicaManager manager(named_model("small-cnn", Shape{3, 10, 12}, ModelOptions{.dropout = false}, 4),
                         {Device::cpu()}, ReplicaOptions{});
  data::Loader loader(patterned_set(), config(variants()[0], true, false));
  loader.start_epoch(0, 0);
  HostBatch batch;
  REQUIRE(loader.next(batch));
  batch.draws = Tensor();
  REQUIRE_THROWS_WITH(manager.train_step(batch, 0.05f, SgdConfig{}),
                      Catch::Contains("u8 pixels needs a draw per sample"));
}
