// The loader's mixup and CutMix (LoaderConfig::mix, data/mix.h): each batch
// is the plain batch mixed by the draw of its (seed, epoch, batch index),
// whole, before any split; a resumed epoch draws the same; 2 replicas train
// on mixed batches as 1 does; and what the loader cannot mix is refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/loader.h"
#include "data/mix.h"
#include "distributed/replica_manager.h"
#include "kernels/loss_math.h"
#include "layers/models.h"
#include "support/replica_models.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

constexpr int64_t kSamples = 45;  // batches of 8: 6 an epoch, the last of 5 (an odd batch: its middle mixes with itself)

std::shared_ptr<data::InMemoryDataset> patterned_set(const Shape& shape = Shape{3, 10, 12}, int classes = 10) {
  const int64_t sample = shape.numel();
  std::vector<uint8_t> pixels(kSamples * sample);
  std::vector<int32_t> labels(kSamples);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 37 + i / sample * 11) % 251);
  for (int64_t i = 0; i < kSamples; ++i) labels[i] = static_cast<int32_t>((i * 7) % classes);
  std::vector<std::string> names;
  for (int c = 0; c < classes; ++c) names.push_back("c" + std::to_string(c));
  return std::make_shared<data::InMemoryDataset>(shape, pixels, labels, names, "patterned");
}

data::LoaderConfig config(bool mixing) {
  data::LoaderConfig c;
  c.batch_size = 8;
  c.threads = 3;
  c.seed = 21;
  c.augment.crop_padding = 2;
  c.augment.horizontal_flip = true;
  if (mixing) c.mix = data::MixConfig{0.8, 1.0, 0.9, 0.5};  // DeiT's alphas, and some batches left unmixed
  return c;
}

struct Batch {
  std::vector<float> images;
  std::vector<int32_t> labels;
  Shape label_shape;
};

Batch copy_of(const HostBatch& b) { return {b.images.to_vector(), b.labels.to_label_vector(), b.labels.shape()}; }

std::vector<Batch> epoch_of(data::Loader& loader, int64_t epoch, int64_t first_batch) {
  loader.start_epoch(epoch, first_batch);
  std::vector<Batch> out;
  HostBatch b;
  while (loader.next(b)) out.push_back(copy_of(b));
  return out;
}

}  // namespace

TEST_CASE("a mixing loader hands out its plain batches mixed whole by each batch's own draw", "[mixup][loader]") {
  auto set = patterned_set();
  data::Loader plain(set, config(false)), mixing(set, config(true));
  const Shape shape = set->sample_shape();
  int mixups = 0, cutmixes = 0, unmixed = 0;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const std::vector<Batch> p = epoch_of(plain, epoch, 0), m = epoch_of(mixing, epoch, 0);
    REQUIRE(p.size() == m.size());
    for (size_t b = 0; b < p.size(); ++b) {
      INFO("epoch " << epoch << ", batch " << b);
      const int64_t count = static_cast<int64_t>(p[b].labels.size());
      REQUIRE(m[b].label_shape == Shape{count, kMixedTargetWidth});
      const data::MixDraw draw =
          data::draw_mix(config(true).mix, 21, epoch, static_cast<int64_t>(b), shape[1], shape[2]);
      std::vector<float> want = p[b].images;
      std::vector<int32_t> targets(count * kMixedTargetWidth);
      const double lam = data::mix_batch(want.data(), p[b].labels.data(), count, shape, draw, targets.data());
      CHECK(std::memcmp(want.data(), m[b].images.data(), want.size() * sizeof(float)) == 0);
      CHECK(targets == m[b].labels);
      (draw.mixed ? (draw.cutmix ? cutmixes : mixups) : unmixed) += 1;
      // (A CutMix box of lam near 1 may be empty: lam is then 1, the images as they were.)
      if (lam != 1.0) CHECK(m[b].images != p[b].images);
    }
  }
  // The draws took each path at least once in these 18 batches.
  CHECK(mixups > 0);
  CHECK(cutmixes > 0);
  CHECK(unmixed > 0);
}

TEST_CASE("a mixing loader resumed mid-epoch hands out the batches of the unbroken epoch", "[mixup][loader]") {
  auto set = patterned_set();
  data::Loader unbroken(set, config(true)), resumed(set, config(true));
  epoch_of(unbroken, 0, 0);  // the loader has run before, as a long run's has
  const std::vector<Batch> whole = epoch_of(unbroken, 1, 0), rest = epoch_of(resumed, 1, 3);
  REQUIRE(rest.size() + 3 == whole.size());
  for (size_t b = 0; b < rest.size(); ++b) {
    INFO("batch " << b + 3);
    CHECK(rest[b].labels == whole[b + 3].labels);
    CHECK(std::memcmp(rest[b].images.data(), whole[b + 3].images.data(), rest[b].images.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a mixing loader refuses bytes augmented on the device and alphas or chances out of range",
          "[mixup][loader]") {
  auto set = patterned_set();
  data::LoaderConfig c = config(true);
  c.augment_on_device = true;
  REQUIRE_THROWS_WITH(data::Loader(set, c), Catch::Contains("cannot be augmented on the device"));
  c = config(true);
  c.mix.cutmix_alpha = -1.0;
  REQUIRE_THROWS_WITH(data::Loader(set, c), Catch::Contains("alpha -1 is not a number >= 0"));
  c = config(true);
  c.mix.mixup_alpha = INFINITY;
  REQUIRE_THROWS_WITH(data::Loader(set, c), Catch::Contains("is not a number >= 0"));
  c = config(true);
  c.mix.switch_prob = 1.5;
  REQUIRE_THROWS_WITH(data::Loader(set, c), Catch::Contains("probability 1.5 is outside [0, 1]"));
}

// The model without batch norm (support/replica_models.h): a replica's
// batch-norm statistics are its slice's, so only the sum of gradients makes
// 2 replicas train as 1.
TEST_CASE("2 replicas train on mixed batches to the parameters of 1, and mixing changes what they learn",
          "[mixup][replica]") {
  auto set = patterned_set(replica_sample_shape, static_cast<int>(replica_classes));
  auto run = [&](int replicas, bool mixing) {
    ReplicaOptions options;
    options.bucket_bytes = 512;
    options.label_smoothing = 0.1f;
    ReplicaManager manager(plain_model, std::vector<Device>(replicas, Device::cpu()), options);
    data::Loader loader(set, config(mixing));
    std::vector<StepMetrics> metrics;
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      loader.start_epoch(epoch, 0);
      HostBatch batch;
      while (loader.next(batch)) metrics.push_back(manager.train_step(batch, 0.05f, SgdConfig{0.9f, 1e-4f, false}));
    }
    REQUIRE(manager.replicas_identical());
    return std::make_pair(metrics, manager.model(0).arenas().params.to_vector());
  };
  const auto [one_metrics, one] = run(1, true);
  const auto [two_metrics, two] = run(2, true);
  const auto [plain_metrics, plain] = run(1, false);
  REQUIRE(one_metrics.size() == two_metrics.size());
  for (size_t s = 0; s < one_metrics.size(); ++s) {
    INFO("step " << s);
    CHECK(two_metrics[s].count == one_metrics[s].count);
    CHECK(two_metrics[s].correct == one_metrics[s].correct);
    CHECK(two_metrics[s].loss_sum == Approx(one_metrics[s].loss_sum).epsilon(1e-5));
  }
  REQUIRE(two.size() == one.size());
  double largest_change = 0.0;
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("parameter " << i << ": " << two[i] << " vs " << one[i]);
    REQUIRE(std::abs(two[i] - one[i]) <= 1e-6 + 1e-4 * std::abs(one[i]));
    largest_change = std::max(largest_change, static_cast<double>(std::abs(plain[i] - one[i])));
  }
  CHECK(largest_change > 1e-3);
}
