#include "data/mix.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "data/random.h"
#include "kernels/float_bits.h"
#include "kernels/loss_math.h"

namespace lockstep::data {
namespace {

// Uniform in [0, 1) with 53 random bits.
double uniform01(Rng& rng) { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; }

// A standard normal (Box-Muller; 1 - u keeps the logarithm's argument in (0, 1]).
double normal(Rng& rng) {
  const double u = 1.0 - uniform01(rng), v = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
}

// Gamma(k, 1) by Marsaglia and Tsang's method; k < 1 through Gamma(k + 1) U^(1/k).
double draw_gamma(Rng& rng, double k) {
  if (k < 1.0) {
    const double u = 1.0 - uniform01(rng);
    return draw_gamma(rng, k + 1.0) * std::pow(u, 1.0 / k);
  }
  const double d = k - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal(rng);
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = uniform01(rng);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

}  // namespace

double draw_beta(Rng& rng, double a) {
  const double x = draw_gamma(rng, a), y = draw_gamma(rng, a);
  // Both may underflow to 0 for a tiny a, where Beta(a, a) is nearly a coin
  // between 0 and 1.
  if (x + y == 0.0) return (rng.next() >> 63) != 0 ? 1.0 : 0.0;
  return x / (x + y);
}

MixDraw draw_mix(const MixConfig& config, uint64_t seed, int64_t epoch, int64_t batch, int64_t height,
                 int64_t width) {
  MixDraw draw;
  if (!config.enabled()) return draw;
  LS_CHECK(height > 0 && width > 0, "mixup: samples of ", height, " x ", width, " pixels");
  Rng rng(derive_seed(seed, kMixStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(batch)));
  // The same draws in the same order whatever the settings, as timm's
  // _params_per_batch decides: whether to mix, then mixup or CutMix.
  const double apply = uniform01(rng), choice = uniform01(rng);
  draw.cy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(height)));
  draw.cx = static_cast<int64_t>(rng.below(static_cast<uint64_t>(width)));
  if (config.mixup_alpha > 0.0 && config.cutmix_alpha > 0.0)
    draw.cutmix = choice < config.switch_prob;
  else
    draw.cutmix = config.cutmix_alpha > 0.0;
  draw.lam = draw_beta(rng, draw.cutmix ? config.cutmix_alpha : config.mixup_alpha);
  // timm mixes nothing when lam is 1, drawn or not.
  draw.mixed = apply < config.prob && draw.lam != 1.0;
  if (!draw.mixed) {
    draw.cutmix = false;
    draw.lam = 1.0;
  }
  return draw;
}

MixBox cutmix_box(int64_t height, int64_t width, double lam, int64_t cy, int64_t cx) {
  const double ratio = std::sqrt(1.0 - lam);
  const int64_t cut_h = static_cast<int64_t>(static_cast<double>(height) * ratio);
  const int64_t cut_w = static_cast<int64_t>(static_cast<double>(width) * ratio);
  MixBox box;
  box.yl = std::clamp<int64_t>(cy - cut_h / 2, 0, height);
  box.yh = std::clamp<int64_t>(cy + cut_h / 2, 0, height);
  box.xl = std::clamp<int64_t>(cx - cut_w / 2, 0, width);
  box.xh = std::clamp<int64_t>(cx + cut_w / 2, 0, width);
  box.lam = 1.0 - static_cast<double>((box.yh - box.yl) * (box.xh - box.xl)) / static_cast<double>(height * width);
  return box;
}

namespace {

// x_i lam + x_j (1 - lam) for both of a pair at once (timm: x * lam +
// x.flip(0) * (1 - lam), each product rounded to f32, then summed).
void blend_pair(float* xi, float* xj, int64_t n, float lam, float rest) {
  for (int64_t k = 0; k < n; ++k) {
    const float a = xi[k], b = xj[k];
    const float a_kept = a * lam, b_given = b * rest;
    const float b_kept = b * lam, a_given = a * rest;
    xi[k] = a_kept + b_given;
    xj[k] = b_kept + a_given;
  }
}

// Swaps the box of every channel between two samples (i == j: nothing).
void swap_box(float* xi, float* xj, const Shape& sample, const MixBox& box) {
  if (xi == xj) return;
  const int64_t height = sample[1], width = sample[2];
  for (int64_t c = 0; c < sample[0]; ++c)
    for (int64_t y = box.yl; y < box.yh; ++y) {
      const int64_t row = (c * height + y) * width;
      std::swap_ranges(xi + row + box.xl, xi + row + box.xh, xj + row + box.xl);
    }
}

}  // namespace

double mix_batch(float* images, const int32_t* labels, int64_t count, const Shape& sample, const MixDraw& draw,
                 int32_t* targets) {
  LS_CHECK(sample.rank() == 3, "mix_batch: samples of ", sample.str(), ", not [C, H, W]");
  const int64_t n = sample.numel();
  double lam = draw.mixed ? draw.lam : 1.0;
  if (draw.mixed && draw.cutmix) {
    const MixBox box = cutmix_box(sample[1], sample[2], draw.lam, draw.cy, draw.cx);
    lam = box.lam;
    for (int64_t i = 0; i < count / 2; ++i) swap_box(images + i * n, images + (count - 1 - i) * n, sample, box);
  } else if (draw.mixed) {
    // timm's scalars: lam and 1 - lam (in double), each taken as f32.
    const float kept = static_cast<float>(lam), given = static_cast<float>(1.0 - lam);
    for (int64_t i = 0; i < (count + 1) / 2; ++i) {
      float* xi = images + i * n;
      float* xj = images + (count - 1 - i) * n;
      if (xi == xj) {  // the middle of an odd batch: x lam + x (1 - lam), as the flip gives
        for (int64_t k = 0; k < n; ++k) xi[k] = xi[k] * kept + xi[k] * given;
      } else {
        blend_pair(xi, xj, n, kept, given);
      }
    }
  }
  const uint32_t lam_bits = float_bits(static_cast<float>(lam));
  for (int64_t i = 0; i < count; ++i) {
    int32_t* row = targets + i * kMixedTargetWidth;
    row[0] = labels[i];
    row[1] = labels[count - 1 - i];
    row[2] = static_cast<int32_t>(lam_bits);
  }
  return lam;
}

}  // namespace lockstep::data
