// The augmentation kernel's CPU twin (kernels/cpu/augment_cpu.h) and its op
// (ops/augment.h) against the float path the data loader took before the
// kernel existed: bytes scaled to [0, 1], then crop or box resize and
// mirror, then normalisation, each written out here as it was, bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "data/augment.h"
#include "kernels/cpu/augment_cpu.h"
#include "ops/augment.h"
#include "support/augment_cases.h"

using namespace lockstep;
using lockstep::testing::augment_cases;
using lockstep::testing::AugmentCase;
using lockstep::testing::bits_difference;

namespace {

// The loader's float path as it was, kept here as the oracle the shared
// maths must reproduce.
struct OldTap {
  int64_t i0 = 0, i1 = 0;
  float t = 0.0f;
};
std::vector<OldTap> old_taps(int64_t start, int64_t box, int64_t size) {
  std::vector<OldTap> taps(static_cast<size_t>(size));
  const double step = static_cast<double>(box) / static_cast<double>(size);
  for (int64_t o = 0; o < size; ++o) {
    const double at = std::clamp((static_cast<double>(o) + 0.5) * step - 0.5, 0.0, static_cast<double>(box - 1));
    const int64_t i0 = static_cast<int64_t>(at);
    taps[o] = {start + i0, start + std::min(i0 + 1, box - 1), static_cast<float>(at - static_cast<double>(i0))};
  }
  return taps;
}

void old_augment(const float* in, float* out, int64_t channels, int64_t height, int64_t width, int64_t crop_padding,
                 const AugmentDraw& draw) {
  if (draw.height > 0) {
    const std::vector<OldTap> rows = old_taps(draw.top, draw.height, height);
    const std::vector<OldTap> cols = old_taps(draw.left, draw.width, width);
    for (int64_t c = 0; c < channels; ++c) {
      const float* src = in + c * height * width;
      float* dst = out + c * height * width;
      for (int64_t y = 0; y < height; ++y) {
        const OldTap& r = rows[y];
        const float* a = src + r.i0 * width;
        const float* b = src + r.i1 * width;
        for (int64_t x = 0; x < width; ++x) {
          const OldTap& k = cols[draw.flip ? width - 1 - x : x];
          const float top = a[k.i0] + k.t * (a[k.i1] - a[k.i0]);
          const float bottom = b[k.i0] + k.t * (b[k.i1] - b[k.i0]);
          dst[y * width + x] = top + r.t * (bottom - top);
        }
      }
    }
    return;
  }
  const int64_t shift_y = draw.dy - crop_padding, shift_x = draw.dx - crop_padding;
  for (int64_t c = 0; c < channels; ++c) {
    const float* src = in + c * height * width;
    float* dst = out + c * height * width;
    for (int64_t y = 0; y < height; ++y) {
      float* row = dst + y * width;
      const int64_t sy = y + shift_y;
      if (sy < 0 || sy >= height) {
        std::memset(row, 0, static_cast<size_t>(width) * sizeof(float));
        continue;
      }
      const float* src_row = src + sy * width;
      for (int64_t x = 0; x < width; ++x) {
        const int64_t sx = (draw.flip ? width - 1 - x : x) + shift_x;
        row[x] = (sx >= 0 && sx < width) ? src_row[sx] : 0.0f;
      }
    }
  }
}

void old_normalize(float* chw, int64_t channels, int64_t plane, const std::vector<float>& mean,
                   const std::vector<float>& std) {
  for (int64_t c = 0; c < channels; ++c) {
    const float m = mean[c], inv_std = 1.0f / std[c];
    float* p = chw + c * plane;
    for (int64_t i = 0; i < plane; ++i) p[i] = (p[i] - m) * inv_std;
  }
}

// A case's whole batch through the old path: read, augment, normalise when the case says so.
std::vector<float> old_path(const AugmentCase& c) {
  const Shape& s = c.shape;
  const int64_t per_sample = s[1] * s[2] * s[3];
  std::vector<float> read(static_cast<size_t>(per_sample)), out(static_cast<size_t>(s.numel()));
  for (int64_t n = 0; n < s[0]; ++n) {
    const uint8_t* bytes = c.images.data() + n * per_sample;
    for (int64_t i = 0; i < per_sample; ++i) read[i] = static_cast<float>(bytes[i]) * (1.0f / 255.0f);
    float* dst = out.data() + n * per_sample;
    old_augment(read.data(), dst, s[1], s[2], s[3], c.crop_padding, c.draws[n]);
    if (c.normalized) old_normalize(dst, s[1], s[2] * s[3], c.mean, c.std);
  }
  return out;
}

}  // namespace

TEST_CASE("augment kernel: the cpu twin from bytes equals the old float path bit for bit", "[augment]") {
  for (const AugmentCase& c : augment_cases()) {
    INFO(c.name);
    const Shape& s = c.shape;
    std::vector<float> out(static_cast<size_t>(s.numel()));
    cpu::augment_batch(c.images.data(), out.data(), s[0], s[1], s[2], s[3], c.crop_padding, c.draws.data(),
                       c.mean.data(), c.std.data());
    REQUIRE(bits_difference(out, old_path(c)) == "");
  }
}

TEST_CASE("augment kernel: the data layer's float path through the cpu twin is unchanged bit for bit", "[augment]") {
  // What the loader calls: apply_augmentation on the read floats, then normalize.
  for (const AugmentCase& c : augment_cases()) {
    INFO(c.name);
    const Shape& s = c.shape;
    const Shape sample{s[1], s[2], s[3]};
    const int64_t per_sample = sample.numel();
    std::vector<float> read(static_cast<size_t>(per_sample)), out(static_cast<size_t>(s.numel()));
    for (int64_t n = 0; n < s[0]; ++n) {
      for (int64_t i = 0; i < per_sample; ++i)
        read[i] = static_cast<float>(c.images[n * per_sample + i]) * (1.0f / 255.0f);
      float* dst = out.data() + n * per_sample;
      data::apply_augmentation(read.data(), dst, sample, c.crop_padding, c.draws[n]);
      if (c.normalized) data::normalize(dst, sample, data::Normalization{c.mean, c.std});
    }
    REQUIRE(bits_difference(out, old_path(c)) == "");
  }
}

TEST_CASE("augment kernel: the op on the cpu equals the old float path and checks its tensors", "[augment]") {
  Context ctx(Device::cpu());
  for (const AugmentCase& c : augment_cases()) {
    INFO(c.name);
    const Shape& s = c.shape;
    Tensor out = Tensor::empty(s);
    ops::augment_images(ctx, Tensor::from_bytes(s, c.images), ops::augment_draws(c.draws), c.crop_padding,
                        Tensor::from_vector(Shape{s[1]}, c.mean), Tensor::from_vector(Shape{s[1]}, c.std), out);
    REQUIRE(bits_difference(out.to_vector(), old_path(c)) == "");
  }

  const AugmentCase c = augment_cases().at(7);
  const Shape& s = c.shape;
  const Tensor images = Tensor::from_bytes(s, c.images), draws = ops::augment_draws(c.draws);
  const Tensor mean = Tensor::from_vector(Shape{s[1]}, c.mean), std = Tensor::from_vector(Shape{s[1]}, c.std);
  Tensor out = Tensor::empty(s);

  const Tensor floats = Tensor::zeros(s);
  REQUIRE_THROWS_WITH(ops::augment_images(ctx, floats, draws, c.crop_padding, mean, std, out),
                      Catch::Contains("images are f32, expected u8"));
  const Tensor few = ops::augment_draws(std::vector<AugmentDraw>(c.draws.begin(), c.draws.end() - 1));
  REQUIRE_THROWS_WITH(ops::augment_images(ctx, images, few, c.crop_padding, mean, std, out),
                      Catch::Contains("draws is"));
  REQUIRE_THROWS_WITH(ops::augment_images(ctx, images, draws, -1, mean, std, out),
                      Catch::Contains("negative crop padding"));
  Tensor wrong = Tensor::empty(Shape{s[0], s[1], s[2], s[3] + 1});
  REQUIRE_THROWS_WITH(ops::augment_images(ctx, images, draws, c.crop_padding, mean, std, wrong),
                      Catch::Contains("out is"));
  const Tensor short_mean = Tensor::zeros(Shape{s[1] + 1});
  REQUIRE_THROWS_WITH(ops::augment_images(ctx, images, draws, c.crop_padding, short_mean, std, out),
                      Catch::Contains("mean is"));
}

TEST_CASE("augment kernel: a resize box outside the sample gives NaN instead of reading past it", "[augment]") {
  const std::vector<uint8_t> bytes(2 * 4 * 5, 7);
  AugmentDraw draw;
  draw.top = 2;
  draw.height = 3;  // rows 2..4 of 4
  draw.width = 5;
  std::vector<float> out(bytes.size());
  cpu::augment_sample(bytes.data(), out.data(), 2, 4, 5, 0, draw, nullptr, nullptr);
  for (float v : out) REQUIRE(v != v);
}
