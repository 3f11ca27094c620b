#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "data/image_resize.h"
#include "data/random.h"
#include "base/error.h"

using namespace lockstep;
using namespace lockstep::data;

namespace {

// The area average written as its definition: every input pixel weighted by
// the area it shares with the output pixel's footprint, in doubles, with no
// separability and no precomputed taps. Channel-major [C, oh, ow], unrounded.
std::vector<double> naive_area(const PixelsHWC& in, int64_t oh, int64_t ow) {
  const double denom = static_cast<double>(in.content_denom);
  const double rows = in.content_height > 0 ? in.content_height / denom : in.height;
  const double cols = in.content_width > 0 ? in.content_width / denom : in.width;
  const double sy = rows / oh, sx = cols / ow;
  std::vector<double> out(static_cast<size_t>(in.channels * oh * ow));
  for (int64_t c = 0; c < in.channels; ++c)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double sum = 0;
        for (int64_t y = 0; y < in.height; ++y) {
          const double wy = std::max(0.0, std::min(oy * sy + sy, y + 1.0) - std::max(oy * sy, double(y)));
          for (int64_t x = 0; x < in.width; ++x) {
            const double wx = std::max(0.0, std::min(ox * sx + sx, x + 1.0) - std::max(ox * sx, double(x)));
            sum += wy * wx * in.data[y * in.stride + x * in.channels + c];
          }
        }
        out[(c * oh + oy) * ow + ox] = sum / (sy * sx);
      }
  return out;
}

struct Image {
  std::vector<uint8_t> bytes;
  PixelsHWC view;
};

// Random pixels, rows padded by `pad` bytes of junk so the stride matters.
Image random_image(int64_t h, int64_t w, int64_t c, int64_t pad, uint64_t seed) {
  Image img;
  const int64_t stride = w * c + pad;
  img.bytes.resize(static_cast<size_t>(h * stride));
  Rng rng(seed);
  for (uint8_t& b : img.bytes) b = static_cast<uint8_t>(rng.below(256));
  img.view = PixelsHWC{img.bytes.data(), h, w, c, stride};
  return img;
}

}  // namespace

TEST_CASE("shrink_area: within one level of a double-precision area average, any ratio", "[data][resize]") {
  struct Case {
    int64_t h, w, c, pad, oh, ow;
  };
  const std::vector<Case> cases = {
      {96, 96, 3, 0, 32, 32},  // whole ratio 3
      {36, 36, 3, 0, 32, 32},  // 9/8: two taps, fractional edges
      {37, 53, 1, 5, 10, 7},   // odd sizes, different ratios per axis, padded rows
      {17, 29, 3, 3, 16, 3},   // nearly 1 on one axis, nearly 10 on the other
      {5, 120, 2, 0, 1, 7},    // a single output row; two channels take the generic path
      {1, 9, 4, 1, 1, 4},      // a single input row, four channels
      {8, 8, 3, 0, 8, 8},      // same size
  };
  for (const Case& k : cases) {
    CAPTURE(k.h, k.w, k.c, k.pad, k.oh, k.ow);
    const Image img = random_image(k.h, k.w, k.c, k.pad, static_cast<uint64_t>(k.h * 1000 + k.w));
    const std::vector<double> want = naive_area(img.view, k.oh, k.ow);
    std::vector<uint8_t> got(want.size());
    shrink_area(img.view, k.oh, k.ow, got.data());
    std::vector<float> got_float(want.size());
    shrink_area(img.view, k.oh, k.ow, got_float.data(), 1.0f / 255.0f);
    double worst = 0, worst_float = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - std::round(want[i])));
      worst_float = std::max(worst_float, std::abs(got_float[i] * 255.0 - want[i]));
    }
    REQUIRE(worst <= 1.0);
    REQUIRE(worst_float < 1e-3);
  }
}

TEST_CASE("shrink_area: content ending inside the last row and column (a JPEG decoded at 1/8)", "[data][resize]") {
  // 333x257 at 1/8: 42x33 pixels holding 41.625 x 32.125 pixels of content.
  Image img = random_image(33, 42, 3, 0, 5);
  img.view.content_height = 257;
  img.view.content_width = 333;
  img.view.content_denom = 8;
  for (auto [oh, ow] : {std::pair{30, 40}, std::pair{32, 41}, std::pair{7, 5}}) {
    const std::vector<double> want = naive_area(img.view, oh, ow);
    std::vector<uint8_t> got(want.size());
    shrink_area(img.view, oh, ow, got.data());
    for (size_t i = 0; i < want.size(); ++i) REQUIRE(std::abs(got[i] - std::round(want[i])) <= 1.0);
  }
  std::vector<uint8_t> after(3 * 33 * 40);
  // 33 rows but only 32.125 of content: 33 output rows would enlarge it.
  REQUIRE_THROWS_WITH(shrink_area(img.view, 33, 40, after.data()), Catch::Contains("is not a shrink"));
  img.view.content_width = 337;  // more than 42 pixels
  REQUIRE_THROWS_WITH(shrink_area(img.view, 30, 40, after.data()), Catch::Contains("beyond the 33x42 image"));
}

TEST_CASE("shrink_area: the target size keeps every pixel, only de-interleaved", "[data][resize]") {
  const Image img = random_image(3, 5, 3, 2, 11);
  std::vector<uint8_t> out(45);
  shrink_area(img.view, 3, 5, out.data());
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t x = 0; x < 5; ++x) REQUIRE(out[(c * 3 + y) * 5 + x] == img.bytes[y * img.view.stride + x * 3 + c]);
}

TEST_CASE("shrink_area: a flat image stays flat, 255 included", "[data][resize]") {
  for (uint8_t level : {uint8_t{0}, uint8_t{77}, uint8_t{255}}) {
    std::vector<uint8_t> flat(31 * 23 * 3, level);
    std::vector<uint8_t> out(3 * 7 * 9);
    shrink_area(PixelsHWC{flat.data(), 31, 23, 3, 23 * 3}, 7, 9, out.data());
    REQUIRE(std::all_of(out.begin(), out.end(), [&](uint8_t v) { return v == level; }));
  }
}

TEST_CASE("shrink_area: enlarging is refused, naming the sizes", "[data][resize]") {
  const Image img = random_image(4, 6, 1, 0, 3);
  std::vector<uint8_t> out(64);
  REQUIRE_THROWS_WITH(shrink_area(img.view, 8, 6, out.data()),
                      Catch::Contains("shrink_area") && Catch::Contains("4x6 to 8x6"));
  REQUIRE_THROWS_WITH(shrink_area(img.view, 0, 6, out.data()), Catch::Contains("shrink_area"));
}
