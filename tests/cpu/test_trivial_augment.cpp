// TrivialAugmentWide (--augment trivial): lockstep's operations against
// torchvision 0.14's on stored images (tests/torch/trivial_oracle.py), and
// the draws: uniform over the operations, bins and signs, and a function of
// (seed, epoch, sample) alone.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "data/augment.h"
#include "data/loader.h"
#include "kernels/cpu/augment_cpu.h"
#include "kernels/trivial_augment_math.h"
#include "support/trivial_cases.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

// The operation alone on a stored image: no crop, no flip, no normalisation.
std::vector<uint8_t> lockstep_bytes(const TrivialImages& set, const TrivialCase& c) {
  const Shape& shape = set.shapes[c.image];
  std::vector<float> out(static_cast<size_t>(shape.numel()));
  cpu::augment_sample(set.images[c.image].data(), out.data(), shape[0], shape[1], shape[2], 0, c.draw, nullptr,
                      nullptr);
  return bytes_of(out);
}

// Pearson's chi-square of `counts` against the uniform distribution.
template <size_t N> double chi_square(const std::array<int64_t, N>& counts) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  const double expected = static_cast<double>(total) / N;
  double sum = 0.0;
  for (int64_t c : counts) sum += (c - expected) * (c - expected) / expected;
  return sum;
}

}  // namespace

TEST_CASE("trivial augment's operations equal torchvision 0.14's within one grey level", "[trivial][torch][ops]") {
  const TrivialImages& set = trivial_images();
  int64_t compared = 0, differing = 0, bytes = 0;
  std::array<int64_t, kTrivialOps> per_op{}, changing{};
  for (const TrivialCase& c : set.cases) {
    INFO(c.name);
    // torchvision's magnitude for the bin and sign (translations in whole pixels, as it truncates them).
    const int32_t op = c.draw.trivial_op;
    const bool translate = op == kTrivialTranslateX || op == kTrivialTranslateY;
    REQUIRE(c.draw.trivial_magnitude == (translate ? std::trunc(c.torch_magnitude) : c.torch_magnitude));
    const ByteDifference d = byte_difference(lockstep_bytes(set, c), c.expected);
    CHECK(d.largest <= 1);
    ++compared;
    ++per_op[op];
    changing[op] += c.expected != set.images[c.image];
    differing += d.count;
    bytes += static_cast<int64_t>(c.expected.size());
  }
  // Every stored case of the three images was compared (trivial_oracle.py:
  // 67 of every operation, 31 and 8 of those that map levels), and each
  // operation but the identity changed the image in some case: none is
  // checked only where it does nothing (equalize on fewer than 255 pixels).
  REQUIRE(set.shapes.size() == 3);
  REQUIRE(compared == static_cast<int64_t>(set.cases.size()));
  REQUIRE(compared == 67 + 31 + 8);
  for (int32_t op = 0; op < kTrivialOps; ++op) {
    INFO("operation " << op);
    REQUIRE(per_op[op] >= 1);
    if (op != kTrivialIdentity) REQUIRE(changing[op] >= 1);
  }
  // Off by one grey level is rare: float rounding, never an operation done otherwise.
  INFO(differing << " of " << bytes << " bytes differ by one");
  REQUIRE(differing * 200 <= bytes);
}

TEST_CASE("trivial augment draws every operation, bin and sign uniformly", "[trivial][data][augment]") {
  data::AugmentConfig config;
  config.crop_padding = 2;
  config.horizontal_flip = true;
  config.trivial = true;
  std::array<int64_t, kTrivialOps> ops{};
  std::array<int64_t, kTrivialBins> bins{};
  std::array<int64_t, 2> signs{};
  constexpr int64_t kSamples = 14 * 31 * 40;
  for (int64_t s = 0; s < kSamples; ++s) {
    const AugmentDraw d = data::draw_augmentation(config, 5, s % 3, s, Shape{3, 8, 8});
    REQUIRE((d.trivial_op >= 0 && d.trivial_op < kTrivialOps && d.trivial_bin >= 0 && d.trivial_bin < kTrivialBins));
    ++ops[d.trivial_op];
    ++bins[d.trivial_bin];
    ++signs[d.trivial_negative];
  }
  // Bounds a uniform draw exceeds with probability 1e-6 each (the chi-square
  // distribution's upper quantiles for 13, 30 and 1 degrees of freedom).
  CHECK(chi_square(ops) < 52.75);
  CHECK(chi_square(bins) < 82.04);
  CHECK(chi_square(signs) < 23.93);
}

TEST_CASE("trivial augment's draw is a function of (seed, epoch, sample), and leaves the crops as they were",
          "[trivial][data][augment]") {
  data::AugmentConfig crop_flip;
  crop_flip.crop_padding = 2;
  crop_flip.horizontal_flip = true;
  data::AugmentConfig trivial = crop_flip;
  trivial.trivial = true;
  const Shape shape{3, 9, 10};
  int same_op_next_epoch = 0;
  for (int64_t s = 0; s < 300; ++s) {
    const AugmentDraw a = data::draw_augmentation(trivial, 9, 2, s, shape);
    const AugmentDraw b = data::draw_augmentation(trivial, 9, 2, s, shape);
    REQUIRE(std::memcmp(&a, &b, sizeof a) == 0);
    const AugmentDraw plain = data::draw_augmentation(crop_flip, 9, 2, s, shape);
    REQUIRE((a.dy == plain.dy && a.dx == plain.dx && a.flip == plain.flip));
    REQUIRE(plain.trivial_op == -1);
    same_op_next_epoch += data::draw_augmentation(trivial, 9, 3, s, shape).trivial_op == a.trivial_op;
  }
  REQUIRE(same_op_next_epoch < 60);  // another epoch, other operations (1 in 14 alike by chance)
}

TEST_CASE("trivial augment follows the crop and flip: the operation sees the cropped, mirrored image",
          "[trivial][augment]") {
  // A rotation of the sample cropped by (1, 3) from padding 2 and mirrored
  // equals the same rotation of that crop made first, without a crop.
  const TrivialImages& set = trivial_images();
  const Shape shape = set.shapes[0];
  const int64_t h = shape[1], w = shape[2];
  AugmentDraw crop;
  crop.dy = 1, crop.dx = 3, crop.flip = true;
  std::vector<float> cropped(static_cast<size_t>(shape.numel()));
  cpu::augment_sample(set.images[0].data(), cropped.data(), shape[0], h, w, 2, crop, nullptr, nullptr);
  for (int32_t op : {kTrivialRotate, kTrivialShearX, kTrivialEqualize, kTrivialSharpness, kTrivialContrast}) {
    INFO("operation " << op);
    AugmentDraw both = crop, alone;
    data::set_trivial_operation(both, op, 17, true, h, w);
    data::set_trivial_operation(alone, op, 17, true, h, w);
    std::vector<float> after(cropped.size()), want(cropped.size());
    cpu::augment_sample(set.images[0].data(), after.data(), shape[0], h, w, 2, both, nullptr, nullptr);
    const std::vector<uint8_t> crop_bytes = bytes_of(cropped);
    cpu::augment_sample(crop_bytes.data(), want.data(), shape[0], h, w, 0, alone, nullptr, nullptr);
    REQUIRE(after == want);
  }
}

TEST_CASE("trivial augment is refused with a random resized crop and on images of 2 channels", "[trivial][data]") {
  auto set = [](int64_t channels) {
    const Shape shape{channels, 6, 6};
    return std::make_shared<data::InMemoryDataset>(shape, std::vector<uint8_t>(static_cast<size_t>(4 * shape.numel())),
                                                   std::vector<int32_t>{0, 1, 0, 1}, std::vector<std::string>{"a", "b"},
                                                   "tiny");
  };
  data::LoaderConfig config;
  config.batch_size = 2;
  config.augment.trivial = true;
  config.augment.random_resized_crop = true;
  REQUIRE_THROWS_WITH(data::Loader(set(3), config), Catch::Contains("not a random resized crop"));
  config.augment.random_resized_crop = false;
  REQUIRE_THROWS_WITH(data::Loader(set(2), config), Catch::Contains("1 or 3 channels"));
  REQUIRE_NOTHROW(data::Loader(set(1), config));
}
