#pragma once
// Augmentation's arithmetic for one output pixel, written once for the CPU
// loops (kernels/cpu/augment_cpu.h) and the CUDA kernel
// (kernels/cuda/augment_cuda.h), in torchvision's order: a pixel becomes a
// float in [0, 1], is cropped from the sample padded with zeros (or taken
// from a box resized bilinearly to the whole sample), mirrored, then
// normalised per channel. Every step rounds as the CPU has always rounded it
// (kernels/rounded_math.h keeps nvcc from fusing steps), so both twins give
// the same bits.
#include <cstdint>
#include <limits>

#include "kernels/host_device.h"
#include "kernels/rounded_math.h"

namespace lockstep {

// What augmentation does to one sample (data/augment.h draws it): the crop's
// offset into the sample padded by the batch's crop padding (each in
// [0, 2 * padding]), whether it is mirrored, and the random-resized-crop box
// (rows top..top+height-1, columns left..left+width-1 of the sample; height
// 0 when there is none, and then the crop applies), and TrivialAugmentWide's
// operation on the cropped bytes (kernels/trivial_augment_math.h: -1 for
// none), its bin, sign, magnitude and, for the geometric operations, the
// inverse affine matrix on centred pixel coordinates (worked out on the host,
// so both twins read the same doubles). Trivially copyable: a batch of draws
// travels to a GPU as its bytes.
struct AugmentDraw {
  int64_t dy = 0, dx = 0;
  bool flip = false;
  int64_t top = 0, left = 0, height = 0, width = 0;
  int32_t trivial_op = -1, trivial_bin = 0;
  bool trivial_negative = false;
  double trivial_magnitude = 0.0;
  double trivial_matrix[6] = {1.0, 0.0, 0.0, 0.0, 1.0, 0.0};
};

// A stored pixel as a float: a byte scaled to [0, 1] exactly as the data
// sets have always converted it, or a float already converted.
LS_HD float pixel_value(uint8_t byte) { return mul_rn(static_cast<float>(byte), 1.0f / 255.0f); }
LS_HD float pixel_value(float value) { return value; }

// The column (of the crop, or of the box's taps) that output column x
// shows: its mirror image when the draw flips the sample.
LS_HD int64_t augment_source_column(const AugmentDraw& draw, int64_t width, int64_t x) {
  return draw.flip ? width - 1 - x : x;
}

// A resize box lies inside the sample; anything else would read outside it.
LS_HD bool augment_box_inside(const AugmentDraw& draw, int64_t height, int64_t width) {
  return draw.height >= 1 && draw.width >= 1 && draw.top >= 0 && draw.left >= 0 && draw.top + draw.height <= height &&
         draw.left + draw.width <= width;
}

// A crop's output row y (or mirrored column) shows padded row y + offset,
// which is input row y + offset - padding: a zero of the padding when that
// lies outside [0, size).
LS_HD int64_t crop_source(int64_t at, int64_t offset, int64_t crop_padding) { return at + offset - crop_padding; }
LS_HD bool crop_inside(int64_t source, int64_t size) { return source >= 0 && source < size; }

// Output pixel (y, column) of a crop, the column already mirrored.
template <typename In>
LS_HD float crop_pixel(const In* plane, int64_t height, int64_t width, int64_t crop_padding, const AugmentDraw& draw,
                       int64_t y, int64_t column) {
  const int64_t sy = crop_source(y, draw.dy, crop_padding), sx = crop_source(column, draw.dx, crop_padding);
  return crop_inside(sy, height) && crop_inside(sx, width) ? pixel_value(plane[sy * width + sx]) : 0.0f;
}

// One axis of a bilinear resize of `box` source pixels from `start` to
// `size` output pixels, pixel centres aligned (half-pixel offsets, as
// torchvision's and PIL's resize): output o reads sources i0 and i1 with
// weights 1 - t and t. The position is found in double and t rounded to
// float once.
struct AugmentTap {
  int64_t i0 = 0, i1 = 0;
  float t = 0.0f;
};
LS_HD AugmentTap augment_tap(int64_t start, int64_t box, int64_t size, int64_t o) {
  const double step = div_rn(static_cast<double>(box), static_cast<double>(size));
  const double last = static_cast<double>(box - 1);
  double at = sub_rn(mul_rn(add_rn(static_cast<double>(o), 0.5), step), 0.5);
  at = at < 0.0 ? 0.0 : (last < at ? last : at);
  const int64_t i0 = static_cast<int64_t>(at);
  return {start + i0, start + (i0 + 1 < box - 1 ? i0 + 1 : box - 1),
          static_cast<float>(sub_rn(at, static_cast<double>(i0)))};
}

// a + t * (b - a), rounded after each step.
LS_HD float augment_lerp(float a, float b, float t) { return add_rn(a, mul_rn(t, sub_rn(b, a))); }

// Output pixel of a resized box from source rows `a` and `b` (the row tap's
// i0 and i1) at the row tap's weight and the (mirrored) column's tap. The
// box is never larger than the sample, so the resize only enlarges or
// copies: no averaging filter is needed.
template <typename In>
LS_HD float box_pixel(const In* a, const In* b, float row_t, const AugmentTap& column) {
  const float top = augment_lerp(pixel_value(a[column.i0]), pixel_value(a[column.i1]), column.t);
  const float bottom = augment_lerp(pixel_value(b[column.i0]), pixel_value(b[column.i1]), column.t);
  return augment_lerp(top, bottom, row_t);
}

// Per-channel normalisation: (x - mean) * (1 / stddev), the reciprocal rounded
// to float first, as the data loader has always applied it.
LS_HD float augment_inv_std(float stddev) { return div_rn(1.0f, stddev); }
LS_HD float augment_normalize(float x, float mean, float inv_std) { return mul_rn(sub_rn(x, mean), inv_std); }

// Output pixel (y, x) of one channel plane of a sample, before
// normalisation, the taps worked out on the spot (the CPU loops work them
// out once per row and column with the same augment_tap). A box outside the
// sample gives NaN rather than reading past it.
template <typename In>
LS_HD float augment_pixel(const In* plane, int64_t height, int64_t width, int64_t crop_padding,
                          const AugmentDraw& draw, int64_t y, int64_t x) {
  const int64_t column = augment_source_column(draw, width, x);
  if (draw.height == 0) return crop_pixel(plane, height, width, crop_padding, draw, y, column);
  if (!augment_box_inside(draw, height, width)) return std::numeric_limits<float>::quiet_NaN();
  const AugmentTap row = augment_tap(draw.top, draw.height, height, y);
  return box_pixel(plane + row.i0 * width, plane + row.i1 * width, row.t,
                   augment_tap(draw.left, draw.width, width, column));
}

}  // namespace lockstep
