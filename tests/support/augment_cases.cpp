#include "support/augment_cases.h"

#include <cstring>
#include <random>
#include <sstream>

#include "data/augment.h"

namespace lockstep::testing {

namespace {

enum class Kind { crop, box };

std::vector<AugmentDraw> make_draws(Kind kind, const Shape& sample, int64_t n, int64_t padding, std::mt19937_64& rng) {
  const int64_t height = sample[1], width = sample[2];
  std::vector<AugmentDraw> draws;
  data::AugmentConfig config;
  config.horizontal_flip = true;
  if (kind == Kind::crop) config.crop_padding = padding;
  else config.random_resized_crop = true;
  // Half the loader's own draws, half drawn here over every allowed value.
  for (int64_t i = 0; i < n / 2; ++i)
    draws.push_back(data::draw_augmentation(config, rng(), static_cast<int64_t>(rng() % 9), i, sample));
  auto below = [&](int64_t bound) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(bound)); };
  while (static_cast<int64_t>(draws.size()) < n) {
    AugmentDraw d;
    d.flip = (rng() & 1) != 0;
    if (kind == Kind::crop) {
      d.dy = below(2 * padding + 1);
      d.dx = below(2 * padding + 1);
    } else {
      switch (draws.size() % 4) {
        case 0: d.height = height, d.width = width; break;  // the whole sample
        case 1: d.height = 1, d.width = 1; break;            // one pixel everywhere
        default: d.height = 1 + below(height), d.width = 1 + below(width); break;
      }
      d.top = below(height - d.height + 1);
      d.left = below(width - d.width + 1);
    }
    draws.push_back(d);
  }
  return draws;
}

}  // namespace

std::vector<AugmentCase> augment_cases() {
  std::mt19937_64 rng(20261127);
  const std::vector<Shape> samples{Shape{1, 5, 7}, Shape{3, 9, 4}, Shape{1, 1, 1}, Shape{3, 13, 11},
                                   Shape{1, 2, 3}, Shape{3, 32, 32}, Shape{3, 6, 17}};
  std::vector<AugmentCase> cases;
  for (const Shape& sample : samples)
    for (int64_t padding : {0, 1, 4})
      for (Kind kind : {Kind::crop, Kind::box})
        for (bool normalized : {false, true}) {
          AugmentCase c;
          const int64_t n = sample[1] * sample[2] > 256 ? 4 : 12;
          c.shape = Shape{n, sample[0], sample[1], sample[2]};
          c.crop_padding = padding;
          c.normalized = normalized;
          c.name = c.shape.str() + (kind == Kind::crop ? " crop" : " resized box") + " padding " +
                   std::to_string(padding) + (normalized ? " normalised" : "");
          c.images.resize(static_cast<size_t>(c.shape.numel()));
          for (size_t i = 0; i < c.images.size(); ++i)
            c.images[i] = i < 2 ? static_cast<uint8_t>(255 * i) : static_cast<uint8_t>(rng() & 0xff);
          c.draws = make_draws(kind, sample, n, padding, rng);
          std::uniform_real_distribution<float> mean(-0.5f, 1.0f), spread(0.05f, 2.0f);
          for (int64_t k = 0; k < sample[0]; ++k) {
            c.mean.push_back(normalized ? mean(rng) : 0.0f);
            c.std.push_back(normalized ? spread(rng) : 1.0f);
          }
          cases.push_back(std::move(c));
        }
  return cases;
}

std::string bits_difference(const std::vector<float>& actual, const std::vector<float>& expected) {
  if (actual.size() != expected.size())
    return std::to_string(actual.size()) + " values, expected " + std::to_string(expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    if (std::memcmp(&actual[i], &expected[i], sizeof(float)) != 0) {
      std::ostringstream out;
      out << "element " << i << " of " << actual.size() << ": " << actual[i] << ", expected " << expected[i];
      return out.str();
    }
  return "";
}

}  // namespace lockstep::testing
