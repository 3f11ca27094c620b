#pragma once
// TrivialAugmentWide's arithmetic (torchvision 0.14's, on uint8 images), one
// output byte at a time, written once for the CPU loops
// (kernels/cpu/augment_cpu.cpp) and the CUDA kernel
// (kernels/cuda/augment_cuda.cu), so both give the same bytes. The image an
// operation reads is the sample already cropped from its zero padding and
// mirrored (augment_math.h's crop, on bytes): `TrivialSource` reads it
// without storing it. Which operation, which of the 31 magnitude bins and
// which sign are drawn on the host (data/augment.cpp), with the affine
// matrix of the geometric operations.
//
// Every float step rounds as torchvision's tensor code rounds it (a
// scalar times a uint8 tensor is a float times a float; a float becomes a
// uint8 by truncation after a clamp to [0, 255]); the geometric operations
// find their nearest source pixel in double, where torchvision uses float,
// so a pixel whose source lies within float rounding of halfway between two
// pixels may take the other one (docs/training.md).
#include <cmath>
#include <cstdint>

#include "kernels/augment_math.h"
#include "kernels/host_device.h"
#include "kernels/rounded_math.h"

namespace lockstep {

// torchvision's order of TrivialAugmentWide's operations: the drawn index.
enum TrivialOp : int32_t {
  kTrivialIdentity = 0,
  kTrivialShearX,
  kTrivialShearY,
  kTrivialTranslateX,
  kTrivialTranslateY,
  kTrivialRotate,
  kTrivialBrightness,
  kTrivialColor,
  kTrivialContrast,
  kTrivialSharpness,
  kTrivialPosterize,
  kTrivialSolarize,
  kTrivialAutoContrast,
  kTrivialEqualize,
};
constexpr int32_t kTrivialOps = 14;
constexpr int32_t kTrivialBins = 31;

// Whether the operation has magnitude bins, and whether it draws a sign.
LS_HD bool trivial_has_bins(int32_t op) {
  return op != kTrivialIdentity && op != kTrivialAutoContrast && op != kTrivialEqualize;
}
LS_HD bool trivial_signed(int32_t op) { return op >= kTrivialShearX && op <= kTrivialSharpness; }

// torch.linspace(0.0, 0.99, 31) in float32, as torch 1.13 computes it (its
// vectorised steps round differently from 0.99 * i / 30 in places; the
// oracle test holds this table to torch's).
LS_HD float trivial_fraction(int32_t bin) {
  const float table[kTrivialBins] = {
      0.0f,         0.0329999998f, 0.0659999996f, 0.0989999995f, 0.131999999f, 0.164999992f, 0.197999999f,
      0.231000006f, 0.263999999f,  0.296999991f,  0.329999983f,  0.363000005f, 0.395999998f, 0.42899999f,
      0.462000012f, 0.495000005f,  0.527999997f,  0.56099999f,   0.593999982f, 0.627000034f, 0.660000026f,
      0.693000019f, 0.726000011f,  0.759000003f,  0.791999996f,  0.824999988f, 0.85800004f,  0.891000032f,
      0.924000025f, 0.957000017f,  0.99000001f};
  return table[bin];
}

// The magnitude torchvision hands the operation (a Python float), signed:
// shears, brightness, colour, contrast and sharpness 0 to 0.99, translations
// 0 to 32 pixels (then truncated to whole pixels), rotation 0 to 135
// degrees, posterize 8 down to 2 bits, solarize's threshold 255 down to 0.
LS_HD double trivial_magnitude(int32_t op, int32_t bin, bool negative) {
  double m = 0.0;
  if (op == kTrivialTranslateX || op == kTrivialTranslateY) m = static_cast<double>((bin * 32) / 30);
  else if (op == kTrivialRotate) m = 4.5 * bin;
  else if (op == kTrivialPosterize) m = static_cast<double>(8 - (2 * bin + 5) / 10);  // 8 - round(bin / 5)
  else if (op == kTrivialSolarize) m = 255.0 - 8.5 * bin;
  else if (trivial_signed(op)) m = static_cast<double>(trivial_fraction(bin));
  return negative && trivial_signed(op) ? -m : m;
}

// The cropped, mirrored sample (augment_math.h's crop on bytes): channel c,
// row y, column x, a zero of the padding outside the image.
struct TrivialSource {
  const uint8_t* sample;  // [C, H, W]
  int64_t channels, height, width, crop_padding;
  const AugmentDraw* draw;

  LS_HD int32_t at(int64_t c, int64_t y, int64_t x) const {
    const int64_t sy = crop_source(y, draw->dy, crop_padding);
    const int64_t sx = crop_source(augment_source_column(*draw, width, x), draw->dx, crop_padding);
    return crop_inside(sy, height) && crop_inside(sx, width) ? sample[(c * height + sy) * width + sx] : 0;
  }
};

// A float clamped to [0, 255] and truncated to a byte (torch's .to(uint8)).
LS_HD int32_t trivial_to_byte(float v) {
  v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
  return static_cast<int32_t>(v);
}

// torchvision's _blend(a, b, factor) with factor = 1 + magnitude: the two
// ratios rounded to float from their double values, then a float sum.
struct TrivialBlend {
  float ratio, rest;
};
LS_HD TrivialBlend trivial_blend_ratios(double magnitude) {
  const double ratio = 1.0 + magnitude;
  return {static_cast<float>(ratio), static_cast<float>(1.0 - ratio)};
}
LS_HD int32_t trivial_blend(TrivialBlend b, float a, float other) {
  return trivial_to_byte(add_rn(mul_rn(b.ratio, a), mul_rn(b.rest, other)));
}

// rgb_to_grayscale of one pixel, truncated to a byte.
LS_HD int32_t trivial_gray(int32_t r, int32_t g, int32_t b) {
  const float sum = add_rn(add_rn(mul_rn(0.2989f, static_cast<float>(r)), mul_rn(0.587f, static_cast<float>(g))),
                           mul_rn(0.114f, static_cast<float>(b)));
  return static_cast<int32_t>(sum);
}
// The grey level contrast compares with: a pixel's grey value with three
// channels, the pixel itself with one.
LS_HD int32_t trivial_gray_at(const TrivialSource& s, int64_t y, int64_t x) {
  return s.channels == 3 ? trivial_gray(s.at(0, y, x), s.at(1, y, x), s.at(2, y, x)) : s.at(0, y, x);
}

// The operations that map each byte of a channel through a table of 256
// (built from the channel's histogram and the image's mean grey level).
LS_HD bool trivial_uses_table(int32_t op) {
  return op == kTrivialBrightness || op == kTrivialContrast || op == kTrivialPosterize || op == kTrivialSolarize ||
         op == kTrivialAutoContrast || op == kTrivialEqualize;
}

// The table of a channel: `histogram` its 256 counts, `gray_sum` the sum of
// the image's grey levels over its `pixels` pixels (contrast's mean: a sum
// of whole numbers, exact in float while below 2^24, as torch sums them).
LS_HD void trivial_table(int32_t op, double magnitude, const uint32_t* histogram, uint64_t gray_sum, int64_t pixels,
                         uint8_t* table) {
  const TrivialBlend blend = trivial_blend_ratios(magnitude);
  if (op == kTrivialEqualize) {
    // step: the pixels outside the last occupied level, over 255; the table
    // maps a level to the count below it, rounded, in steps.
    uint64_t total = 0, last = 0;
    for (int v = 0; v < 256; ++v) {
      total += histogram[v];
      if (histogram[v] != 0) last = histogram[v];
    }
    const uint64_t step = (total - last) / 255;
    uint64_t below = 0;
    for (int v = 0; v < 256; ++v) {
      uint64_t mapped = step == 0 ? static_cast<uint64_t>(v) : (v == 0 ? 0 : (below + step / 2) / step);
      table[v] = static_cast<uint8_t>(mapped > 255 ? 255 : mapped);
      below += histogram[v];
    }
    return;
  }
  int32_t lo = 255, hi = 0;
  for (int v = 0; v < 256; ++v)
    if (histogram[v] != 0) {
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
  // autocontrast: a channel of one level keeps it (torch's scale is infinite there)
  const float minimum = hi > lo ? static_cast<float>(lo) : 0.0f;
  const float scale = hi > lo ? div_rn(255.0f, static_cast<float>(hi - lo)) : 1.0f;
  const float mean = div_rn(static_cast<float>(gray_sum), static_cast<float>(pixels));
  const int32_t bits = static_cast<int32_t>(magnitude);
  const float threshold = static_cast<float>(magnitude);
  for (int v = 0; v < 256; ++v) {
    const float f = static_cast<float>(v);
    int32_t out = v;
    if (op == kTrivialBrightness) out = trivial_blend(blend, f, 0.0f);
    else if (op == kTrivialContrast) out = trivial_blend(blend, f, mean);
    else if (op == kTrivialPosterize) out = v & (0xff << (8 - bits)) & 0xff;
    else if (op == kTrivialSolarize) out = f >= threshold ? 255 - v : v;
    else if (op == kTrivialAutoContrast) out = trivial_to_byte(mul_rn(sub_rn(f, minimum), scale));
    table[v] = static_cast<uint8_t>(out);
  }
}

// torch's nearbyint: halves to even.
LS_HD double trivial_round(double v) { return rint(v); }

// Output byte (c, y, x) of the operation `draw` names on the source, `table`
// the channel's (trivial_table) for the operations that use one.
LS_HD int32_t trivial_byte(const TrivialSource& s, const uint8_t* table, int64_t c, int64_t y, int64_t x) {
  const AugmentDraw& d = *s.draw;
  const int32_t op = d.trivial_op;
  if (trivial_uses_table(op)) return table[s.at(c, y, x)];
  if (op >= kTrivialShearX && op <= kTrivialRotate) {
    // The inverse affine matrix maps the output pixel's centre, relative to
    // the image's centre, to the source's; the nearest pixel, or the fill 0.
    const double half_w = 0.5 * static_cast<double>(s.width), half_h = 0.5 * static_cast<double>(s.height);
    const double xc = sub_rn(add_rn(static_cast<double>(x), 0.5), half_w);
    const double yc = sub_rn(add_rn(static_cast<double>(y), 0.5), half_h);
    const double* m = d.trivial_matrix;
    const double sx = add_rn(add_rn(mul_rn(m[0], xc), mul_rn(m[1], yc)), m[2]);
    const double sy = add_rn(add_rn(mul_rn(m[3], xc), mul_rn(m[4], yc)), m[5]);
    const double ix = trivial_round(sub_rn(add_rn(sx, half_w), 0.5));
    const double iy = trivial_round(sub_rn(add_rn(sy, half_h), 0.5));
    if (!(ix >= 0.0 && ix < static_cast<double>(s.width) && iy >= 0.0 && iy < static_cast<double>(s.height))) return 0;
    return s.at(c, static_cast<int64_t>(iy), static_cast<int64_t>(ix));
  }
  const int32_t v = s.at(c, y, x);
  if (op == kTrivialColor) {
    if (s.channels != 3) return v;
    return trivial_blend(trivial_blend_ratios(d.trivial_magnitude), static_cast<float>(v),
                         static_cast<float>(trivial_gray_at(s, y, x)));
  }
  if (op == kTrivialSharpness) {
    if (s.width <= 2 || s.height <= 2) return v;
    // The blurred image (weights 1 around, 5 at the centre, over 13, rounded:
    // k / 13 is never halfway, so integers give torch's rounding) inside the
    // border, the image itself on it.
    int32_t blurred = v;
    if (y > 0 && x > 0 && y < s.height - 1 && x < s.width - 1) {
      int32_t sum = 4 * v;
      for (int64_t dy = -1; dy <= 1; ++dy)
        for (int64_t dx = -1; dx <= 1; ++dx) sum += s.at(c, y + dy, x + dx);
      blurred = (2 * sum + 13) / 26;
    }
    return trivial_blend(trivial_blend_ratios(d.trivial_magnitude), static_cast<float>(v),
                         static_cast<float>(blurred));
  }
  return v;  // identity
}

}  // namespace lockstep
