#include "data/augment.h"

#include <cmath>

#include "base/error.h"
#include "data/random.h"
#include "kernels/augment_math.h"
#include "kernels/cpu/augment_cpu.h"
#include "kernels/trivial_augment_math.h"

namespace lockstep::data {

Normalization imagenet_normalization() { return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}; }

Normalization no_normalization(int64_t channels) {
  return {std::vector<float>(static_cast<size_t>(channels), 0.0f), std::vector<float>(static_cast<size_t>(channels), 1.0f)};
}


Normalization compute_normalization(const Dataset& dataset, int64_t max_samples, bool skip_bad) {
  const Shape shape = dataset.sample_shape();
  const int64_t channels = shape[0], plane = shape[1] * shape[2];
  const int64_t size = dataset.size();
  LS_CHECK(size > 0, "compute_normalization: ", dataset.source(), " is empty");
  const int64_t used = (max_samples > 0 && max_samples < size) ? max_samples : size;
  // Per channel: count, mean and sum of squared deviations, merged sample by
  // sample (Chan et al.), so no E[x^2] - mean^2 cancellation.
  std::vector<double> count(channels, 0.0), mean(channels, 0.0), m2(channels, 0.0);
  std::vector<float> pixels(static_cast<size_t>(shape.numel()));
  for (int64_t k = 0; k < used; ++k) {
    const int64_t index = used == size ? k : k * size / used;
    if (!skip_bad) {
      dataset.read(index, pixels.data());
    } else {
      try {
        dataset.read(index, pixels.data());
      } catch (const Error&) {
        continue;  // the loader meets this sample again and reports it
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      const float* p = pixels.data() + c * plane;
      double sum = 0.0;
      for (int64_t i = 0; i < plane; ++i) sum += p[i];
      const double local_mean = sum / static_cast<double>(plane);
      double local_m2 = 0.0;
      for (int64_t i = 0; i < plane; ++i) local_m2 += (p[i] - local_mean) * (p[i] - local_mean);
      const double n = static_cast<double>(plane), total = count[c] + n;
      const double delta = local_mean - mean[c];
      mean[c] += delta * n / total;
      m2[c] += local_m2 + delta * delta * count[c] * n / total;
      count[c] = total;
    }
  }
  LS_CHECK(count[0] > 0, "compute_normalization: no readable sample in ", dataset.source());
  Normalization norm;
  for (int64_t c = 0; c < channels; ++c) {
    const double sd = std::sqrt(m2[c] / count[c]);
    norm.mean.push_back(static_cast<float>(mean[c]));
    norm.std.push_back(sd > 1e-12 ? static_cast<float>(sd) : 1.0f);
  }
  return norm;
}

namespace {
void draw_resized_crop(AugmentDraw& draw, int64_t height, int64_t width, Rng& rng);
void draw_trivial(AugmentDraw& draw, int64_t height, int64_t width, Rng& rng);
}  // namespace

AugmentDraw draw_augmentation(const AugmentConfig& config, uint64_t seed, int64_t epoch, int64_t sample,
                              const Shape& shape) {
  AugmentDraw draw;
  if (!config.enabled()) return draw;
  Rng rng(derive_seed(seed, kAugmentStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(sample)));
  // Always draw all three, so turning one option off leaves the others' draws unchanged.
  const uint64_t span = 2 * static_cast<uint64_t>(config.crop_padding) + 1;
  draw.dy = static_cast<int64_t>(rng.below(span));
  draw.dx = static_cast<int64_t>(rng.below(span));
  const bool flip = (rng.next() >> 63) != 0;
  draw.flip = config.horizontal_flip && flip;
  if (config.random_resized_crop) draw_resized_crop(draw, shape[1], shape[2], rng);
  if (config.trivial) draw_trivial(draw, shape[1], shape[2], rng);
  return draw;
}

namespace {

double uniform(Rng& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
}

void draw_resized_crop(AugmentDraw& draw, int64_t height, int64_t width, Rng& rng) {
  // torchvision's RandomResizedCrop.get_params: ten tries at a box of random
  // area and aspect ratio, then the centred box of the ratio clamped to [3/4, 4/3].
  const double min_ratio = 3.0 / 4.0, max_ratio = 4.0 / 3.0;
  const double area = static_cast<double>(height * width);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * uniform(rng, 0.08, 1.0);
    const double ratio = std::exp(uniform(rng, std::log(min_ratio), std::log(max_ratio)));
    const int64_t w = std::llround(std::sqrt(target_area * ratio));
    const int64_t h = std::llround(std::sqrt(target_area / ratio));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      draw.top = static_cast<int64_t>(rng.below(static_cast<uint64_t>(height - h + 1)));
      draw.left = static_cast<int64_t>(rng.below(static_cast<uint64_t>(width - w + 1)));
      draw.height = h;
      draw.width = w;
      return;
    }
  }
  const double ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width, h = height;
  if (ratio < min_ratio) h = std::llround(static_cast<double>(w) / min_ratio);
  else if (ratio > max_ratio) w = std::llround(static_cast<double>(h) * max_ratio);
  draw.top = (height - h) / 2;
  draw.left = (width - w) / 2;
  draw.height = h;
  draw.width = w;
}

// Python's math.radians and math.degrees, as torchvision calls them.
double radians(double degrees) { return degrees * (M_PI / 180.0); }
double degrees(double radians) { return radians * (180.0 / M_PI); }

// torchvision's _get_inverse_affine_matrix (no scale), step for step in
// double: the matrix from an output pixel's centred coordinates to its source's.
void inverse_affine(double* m, double cx, double cy, double angle, double tx, double ty, double shear_x,
                    double shear_y) {
  const double rot = radians(angle), sx = radians(shear_x), sy = radians(shear_y);
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  m[0] = d, m[1] = -b, m[2] = 0.0, m[3] = -c, m[4] = a, m[5] = 0.0;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
}

// TrivialAugmentWide.forward's draws: the operation, its bin and its sign
// (always all three, whether the operation uses them or not), then what the
// operation does with them, as torchvision's _apply_op: shears about the
// top-left corner (center=[0, 0]) by atan(magnitude), translations by whole
// pixels, rotations about the centre, by the magnitude in degrees anticlockwise.
void draw_trivial(AugmentDraw& draw, int64_t height, int64_t width, Rng& rng) {
  draw.trivial_op = static_cast<int32_t>(rng.below(kTrivialOps));
  draw.trivial_bin = static_cast<int32_t>(rng.below(kTrivialBins));
  draw.trivial_negative = (rng.next() >> 63) != 0;
  set_trivial_operation(draw, draw.trivial_op, draw.trivial_bin, draw.trivial_negative, height, width);
}

}  // namespace

void set_trivial_operation(AugmentDraw& draw, int32_t op, int32_t bin, bool negative, int64_t height,
                           int64_t width) {
  LS_CHECK(op >= 0 && op < kTrivialOps && bin >= 0 && bin < kTrivialBins, "set_trivial_operation: operation ", op,
           " bin ", bin, " out of range");
  draw.trivial_op = op;
  draw.trivial_bin = bin;
  draw.trivial_negative = negative;
  const double m = trivial_magnitude(op, bin, negative);
  draw.trivial_magnitude = m;
  const double top_left_x = -0.5 * static_cast<double>(width), top_left_y = -0.5 * static_cast<double>(height);
  double* matrix = draw.trivial_matrix;
  if (op == kTrivialShearX) inverse_affine(matrix, top_left_x, top_left_y, 0.0, 0.0, 0.0, degrees(std::atan(m)), 0.0);
  else if (op == kTrivialShearY) inverse_affine(matrix, top_left_x, top_left_y, 0.0, 0.0, 0.0, 0.0, degrees(std::atan(m)));
  else if (op == kTrivialTranslateX) inverse_affine(matrix, 0.0, 0.0, 0.0, m, 0.0, 0.0, 0.0);
  else if (op == kTrivialTranslateY) inverse_affine(matrix, 0.0, 0.0, 0.0, 0.0, m, 0.0, 0.0);
  else if (op == kTrivialRotate) inverse_affine(matrix, 0.0, 0.0, -m, 0.0, 0.0, 0.0, 0.0);
}

void apply_augmentation(const float* in, float* out, const Shape& shape, int64_t crop_padding,
                        const AugmentDraw& draw) {
  cpu::augment_sample(in, out, shape[0], shape[1], shape[2], crop_padding, draw, nullptr, nullptr);
}

void normalize(float* chw, const Shape& shape, const Normalization& norm) {
  const int64_t channels = shape[0], plane = shape[1] * shape[2];
  LS_CHECK(static_cast<int64_t>(norm.mean.size()) == channels && static_cast<int64_t>(norm.std.size()) == channels,
           "normalize: ", norm.mean.size(), " means and ", norm.std.size(), " stds for ", channels,
           " channels of ", shape.str());
  for (int64_t c = 0; c < channels; ++c) {
    const float mean = norm.mean[c], inv_std = augment_inv_std(norm.std[c]);
    float* p = chw + c * plane;
    for (int64_t i = 0; i < plane; ++i) p[i] = augment_normalize(p[i], mean, inv_std);
  }
}

}  // namespace lockstep::data
