#include "kernels/cpu/augment_cpu.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/thread_pool.h"
#include "kernels/trivial_augment_math.h"

namespace lockstep::cpu {
namespace {

// A resized box's taps depend only on the row or the column, so they are
// worked out once per sample rather than once per pixel as on the GPU.
std::vector<AugmentTap> taps(int64_t start, int64_t box, int64_t size) {
  std::vector<AugmentTap> out(static_cast<size_t>(size));
  for (int64_t o = 0; o < size; ++o) out[o] = augment_tap(start, box, size, o);
  return out;
}

// One output row of a crop from source row `src_row`: output column x shows
// source column x + shift, or width - 1 - x + shift mirrored (shift = dx -
// padding; augment_math.h's crop_source of augment_source_column), a zero
// of the padding where that lies outside the row. The columns inside form
// one run, copied in a loop without tests, which the compiler vectorises.
template <typename In>
void crop_row(const In* src_row, float* row, int64_t width, int64_t crop_padding, const AugmentDraw& draw) {
  const int64_t shift = draw.dx - crop_padding;
  const int64_t first = std::clamp(draw.flip ? shift : -shift, int64_t{0}, width);
  const int64_t end = std::clamp(draw.flip ? width + shift : width - shift, first, width);
  std::fill(row, row + first, 0.0f);
  if (draw.flip) {
    const int64_t last = width - 1 + shift;
    for (int64_t x = first; x < end; ++x) row[x] = pixel_value(src_row[last - x]);
  } else {
    for (int64_t x = first; x < end; ++x) row[x] = pixel_value(src_row[x + shift]);
  }
  std::fill(row + end, row + width, 0.0f);
}

// TrivialAugmentWide on the cropped, mirrored bytes
// (kernels/trivial_augment_math.h), then to floats and normalised: a table
// per channel for the operations that map levels, built from its histogram.
void trivial_one(const uint8_t* in, float* out, int64_t channels, int64_t height, int64_t width, int64_t crop_padding,
                 const AugmentDraw& draw, const float* mean, const float* stddev) {
  const TrivialSource source{in, channels, height, width, crop_padding, &draw};
  const int64_t plane = height * width;
  const int32_t op = draw.trivial_op;
  uint64_t gray_sum = 0;
  if (op == kTrivialContrast)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) gray_sum += static_cast<uint64_t>(trivial_gray_at(source, y, x));
  uint8_t table[256] = {};
  for (int64_t c = 0; c < channels; ++c) {
    if (trivial_uses_table(op)) {
      uint32_t histogram[256] = {};
      for (int64_t y = 0; y < height; ++y)
        for (int64_t x = 0; x < width; ++x) ++histogram[source.at(c, y, x)];
      trivial_table(op, draw.trivial_magnitude, histogram, gray_sum, plane, table);
    }
    float* dst = out + c * plane;
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x)
        dst[y * width + x] = pixel_value(static_cast<uint8_t>(trivial_byte(source, table, c, y, x)));
    if (!mean) continue;
    const float shift = mean[c], inv_std = augment_inv_std(stddev[c]);
    for (int64_t i = 0; i < plane; ++i) dst[i] = augment_normalize(dst[i], shift, inv_std);
  }
}

template <typename In>
void augment_one(const In* in, float* out, int64_t channels, int64_t height, int64_t width, int64_t crop_padding,
                 const AugmentDraw& draw, const float* mean, const float* stddev) {
  const int64_t plane = height * width;
  const bool box = draw.height != 0;
  if (draw.trivial_op >= 0) {
    // TrivialAugment reads bytes and follows a crop, never a resized box.
    if constexpr (std::is_same_v<In, uint8_t>) {
      if (!box) return trivial_one(in, out, channels, height, width, crop_padding, draw, mean, stddev);
    }
    std::fill(out, out + channels * plane, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  if (box && !augment_box_inside(draw, height, width)) {
    std::fill(out, out + channels * plane, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  std::vector<AugmentTap> rows, columns;
  if (box) {
    rows = taps(draw.top, draw.height, height);
    columns = taps(draw.left, draw.width, width);
  }
  for (int64_t c = 0; c < channels; ++c) {
    const In* src = in + c * plane;
    float* dst = out + c * plane;
    // Row by row, what depends on the row alone worked out once.
    for (int64_t y = 0; y < height; ++y) {
      float* row = dst + y * width;
      if (box) {
        const AugmentTap& r = rows[y];
        const In* a = src + r.i0 * width;
        const In* b = src + r.i1 * width;
        for (int64_t x = 0; x < width; ++x)
          row[x] = box_pixel(a, b, r.t, columns[augment_source_column(draw, width, x)]);
        continue;
      }
      const int64_t sy = crop_source(y, draw.dy, crop_padding);
      if (!crop_inside(sy, height)) {
        std::fill(row, row + width, 0.0f);
        continue;
      }
      crop_row(src + sy * width, row, width, crop_padding, draw);
    }
    if (!mean) continue;
    const float shift = mean[c], inv_std = augment_inv_std(stddev[c]);
    for (int64_t i = 0; i < plane; ++i) dst[i] = augment_normalize(dst[i], shift, inv_std);
  }
}

}  // namespace

void augment_sample(const uint8_t* in, float* out, int64_t channels, int64_t height, int64_t width,
                    int64_t crop_padding, const AugmentDraw& draw, const float* mean, const float* stddev) {
  augment_one(in, out, channels, height, width, crop_padding, draw, mean, stddev);
}

void augment_sample(const float* in, float* out, int64_t channels, int64_t height, int64_t width,
                    int64_t crop_padding, const AugmentDraw& draw, const float* mean, const float* stddev) {
  augment_one(in, out, channels, height, width, crop_padding, draw, mean, stddev);
}

void augment_batch(const uint8_t* in, float* out, int64_t n, int64_t channels, int64_t height, int64_t width,
                   int64_t crop_padding, const AugmentDraw* draws, const float* mean, const float* stddev) {
  const int64_t per_sample = channels * height * width;
  parallel_items(n, per_sample, [&](int64_t i) {
    augment_one(in + i * per_sample, out + i * per_sample, channels, height, width, crop_padding, draws[i], mean,
                stddev);
  });
}

}  // namespace lockstep::cpu
