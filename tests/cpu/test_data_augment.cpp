#include <catch2/catch.hpp>

#include <set>

#include "data/augment.h"
#include "base/error.h"

using namespace lockstep;
using namespace lockstep::data;

namespace {

// The reference: pad with zeros, crop at (dy, dx), then mirror, as torchvision does.
std::vector<float> reference(const std::vector<float>& in, int64_t c, int64_t h, int64_t w, int64_t p, AugmentDraw d) {
  const int64_t ph = h + 2 * p, pw = w + 2 * p;
  std::vector<float> padded(c * ph * pw, 0.0f), out(c * h * w);
  for (int64_t k = 0; k < c; ++k)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) padded[(k * ph + y + p) * pw + x + p] = in[(k * h + y) * w + x];
  for (int64_t k = 0; k < c; ++k)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const int64_t cx = d.flip ? w - 1 - x : x;
        out[(k * h + y) * w + x] = padded[(k * ph + y + d.dy) * pw + cx + d.dx];
      }
  return out;
}

std::vector<float> iota_image(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i + 1);
  return v;
}

}  // namespace

TEST_CASE("augment: a crop offset by (0, 2) with padding 1 equals the hand-written result", "[data][augment]") {
  // One channel of 3x4: 1 2 3 4 / 5 6 7 8 / 9 10 11 12. Offset (0, 2) into the
  // padded 5x6 image shows input rows -1..1 and columns 1..4.
  std::vector<float> in = iota_image(12), out(12);
  apply_augmentation(in.data(), out.data(), Shape{1, 3, 4}, 1, AugmentDraw{0, 2, false});
  REQUIRE(out == std::vector<float>{0, 0, 0, 0, 2, 3, 4, 0, 6, 7, 8, 0});
  apply_augmentation(in.data(), out.data(), Shape{1, 3, 4}, 1, AugmentDraw{0, 2, true});
  REQUIRE(out == std::vector<float>{0, 0, 0, 0, 0, 4, 3, 2, 0, 8, 7, 6});
  apply_augmentation(in.data(), out.data(), Shape{1, 3, 4}, 1, AugmentDraw{1, 1, false});
  REQUIRE(out == in);  // the centred crop
}

TEST_CASE("augment: every crop and flip equals pad-crop-mirror, on 3 channels of 5x3", "[data][augment]") {
  const int64_t c = 3, h = 5, w = 3, p = 2;
  std::vector<float> in = iota_image(c * h * w), out(c * h * w);
  for (int64_t dy = 0; dy <= 2 * p; ++dy)
    for (int64_t dx = 0; dx <= 2 * p; ++dx)
      for (bool flip : {false, true}) {
        AugmentDraw d{dy, dx, flip};
        apply_augmentation(in.data(), out.data(), Shape{c, h, w}, p, d);
        REQUIRE(out == reference(in, c, h, w, p, d));
      }
}

TEST_CASE("augment: draws depend only on (seed, epoch, sample) and cover every offset", "[data][augment]") {
  AugmentConfig config{2, true};
  std::set<int64_t> offsets;
  int flips = 0;
  for (int64_t s = 0; s < 1000; ++s) {
    AugmentDraw a = draw_augmentation(config, 7, 3, s, Shape{1, 8, 8}),
                b = draw_augmentation(config, 7, 3, s, Shape{1, 8, 8});
    REQUIRE((a.dy == b.dy && a.dx == b.dx && a.flip == b.flip));
    REQUIRE((a.dy >= 0 && a.dy <= 4 && a.dx >= 0 && a.dx <= 4));
    offsets.insert(a.dy * 5 + a.dx);
    flips += a.flip;
  }
  REQUIRE(offsets.size() == 25);
  REQUIRE(flips > 400);
  REQUIRE(flips < 600);
  int same = 0;
  for (int64_t s = 0; s < 100; ++s) {
    AugmentDraw a = draw_augmentation(config, 7, 3, s, Shape{1, 8, 8}),
                b = draw_augmentation(config, 7, 4, s, Shape{1, 8, 8});
    same += (a.dy == b.dy && a.dx == b.dx && a.flip == b.flip);
  }
  REQUIRE(same < 20);  // another epoch, other draws
  AugmentDraw off = draw_augmentation(AugmentConfig{}, 7, 3, 5, Shape{1, 8, 8});
  REQUIRE((off.dy == 0 && off.dx == 0 && !off.flip));
  AugmentDraw no_flip = draw_augmentation(AugmentConfig{2, false}, 7, 3, 5, Shape{1, 8, 8});
  REQUIRE_FALSE(no_flip.flip);
}

TEST_CASE("augment: normalisation statistics per channel, and normalize applies them", "[data][augment]") {
  // Channel 0 is 51 everywhere (mean 0.2, no spread -> std 1); channel 1 is 0
  // in half the samples and 255 in the other half (mean 0.5, std 0.5).
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  for (int i = 0; i < 6; ++i) {
    for (int k = 0; k < 4; ++k) pixels.push_back(51);
    for (int k = 0; k < 4; ++k) pixels.push_back(i % 2 ? 255 : 0);
    labels.push_back(0);
  }
  InMemoryDataset d(Shape{2, 2, 2}, pixels, labels, {"only"}, "test");
  Normalization n = compute_normalization(d);
  REQUIRE(n.mean[0] == Approx(0.2f));
  REQUIRE(n.std[0] == 1.0f);
  REQUIRE(n.mean[1] == Approx(0.5f));
  REQUIRE(n.std[1] == Approx(0.5f));
  Normalization sampled = compute_normalization(d, 2);  // samples 0 and 3
  REQUIRE(sampled.mean[1] == Approx(0.5f));
  std::vector<float> x(8);
  d.read(1, x.data());
  normalize(x.data(), Shape{2, 2, 2}, n);
  REQUIRE(x[0] == Approx(0.0f).margin(1e-6));
  REQUIRE(x[4] == Approx(1.0f));
  REQUIRE_THROWS_WITH(normalize(x.data(), Shape{3, 1, 1}, n), Catch::Contains("2 means and 2 stds for 3 channels"));
}

TEST_CASE("augment: random resized crop boxes follow torchvision's rule and depend only on the draw",
          "[data][augment]") {
  AugmentConfig config;
  config.random_resized_crop = true;
  config.horizontal_flip = true;
  for (const Shape& shape : {Shape{3, 32, 32}, Shape{1, 24, 40}, Shape{3, 96, 96}}) {
    INFO("sample " << shape.str());
    const double area = double(shape[1] * shape[2]);
    double smallest = 1.0, largest = 0.0, widest = 1.0, tallest = 1.0;
    int flips = 0;
    for (int64_t s = 0; s < 2000; ++s) {
      const AugmentDraw a = draw_augmentation(config, 5, 1, s, shape), b = draw_augmentation(config, 5, 1, s, shape);
      REQUIRE((a.top == b.top && a.left == b.left && a.height == b.height && a.width == b.width && a.flip == b.flip));
      REQUIRE((a.height >= 1 && a.width >= 1 && a.top >= 0 && a.left >= 0));
      REQUIRE((a.top + a.height <= shape[1] && a.left + a.width <= shape[2]));
      const double fraction = double(a.height * a.width) / area;
      const double ratio = double(a.width) / double(a.height);
      smallest = std::min(smallest, fraction);
      largest = std::max(largest, fraction);
      widest = std::max(widest, ratio);
      tallest = std::min(tallest, ratio);
      flips += a.flip;
    }
    // Areas from 8% to the whole sample, ratios within 3/4..4/3 up to the rounding of
    // whole pixels (a side of 8 px may be one pixel off the exact ratio).
    REQUIRE(smallest < 0.12);
    REQUIRE(smallest > 0.05);
    REQUIRE(largest > 0.75);  // 24x40 holds no box above 0.8 of its area within ratio 4/3
    REQUIRE(widest > 1.25);
    REQUIRE(tallest < 0.8);
    REQUIRE(widest < 4.0 / 3.0 * 1.2);
    REQUIRE(tallest > 3.0 / 4.0 / 1.2);
    REQUIRE(flips > 900);
    REQUIRE(flips < 1100);
  }
}

TEST_CASE("augment: a random resized crop of the whole sample is the sample, mirrored when drawn", "[data][augment]") {
  const Shape shape{2, 5, 7};
  std::vector<float> in(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i) * 0.25f - 3.0f;
  AugmentDraw whole;
  whole.height = 5;
  whole.width = 7;
  std::vector<float> out(in.size());
  apply_augmentation(in.data(), out.data(), shape, 0, whole);
  REQUIRE(out == in);
  whole.flip = true;
  apply_augmentation(in.data(), out.data(), shape, 0, whole);
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t y = 0; y < 5; ++y)
      for (int64_t x = 0; x < 7; ++x) REQUIRE(out[(c * 5 + y) * 7 + x] == in[(c * 5 + y) * 7 + (6 - x)]);
  // A box of a linear ramp enlarged: bilinear interpolation of a linear function is that function
  // at the sampled points (half-pixel centres), away from the clamped edges.
  AugmentDraw box;
  box.top = 1;
  box.left = 2;
  box.height = 3;
  box.width = 4;
  std::vector<float> ramp(in.size());
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t y = 0; y < 5; ++y)
      for (int64_t x = 0; x < 7; ++x) ramp[(c * 5 + y) * 7 + x] = 2.0f * float(y) - 0.5f * float(x) + float(c);
  apply_augmentation(ramp.data(), out.data(), shape, 0, box);
  for (int64_t y = 1; y < 4; ++y)
    for (int64_t x = 1; x < 6; ++x) {
      const double sy = 1 + (y + 0.5) * 3.0 / 5.0 - 0.5, sx = 2 + (x + 0.5) * 4.0 / 7.0 - 0.5;
      REQUIRE(out[(1 * 5 + y) * 7 + x] == Approx(2.0 * sy - 0.5 * sx + 1.0).epsilon(1e-6));
    }
}
