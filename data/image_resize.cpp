#include "data/image_resize.h"

#include <algorithm>
#include <vector>

#include "base/error.h"

namespace lockstep::data {
namespace {

// Along one axis, the input pixels each output pixel covers and their weights.
struct AxisTaps {
  std::vector<int64_t> first;   // per output pixel: its first input pixel
  std::vector<int64_t> offset;  // per output pixel: where its weights start (out + 1 entries)
  std::vector<float> weight;
};

// Exact in integers: for `content` / `denom` input pixels of content shrunk
// to `out` pixels, in units of 1/(denom*out) of an input pixel, input pixel i
// spans [i*denom*out, (i+1)*denom*out) and output pixel o spans
// [o*content, (o+1)*content), so every overlap is a whole number and no
// sliver of rounding error becomes a tap.
AxisTaps area_taps(int64_t content, int64_t denom, int64_t out) {
  AxisTaps taps;
  taps.first.resize(static_cast<size_t>(out));
  taps.offset.resize(static_cast<size_t>(out + 1));
  taps.weight.reserve(static_cast<size_t>(out * (content / (denom * out) + 2)));
  const int64_t pixel = denom * out;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t begin = o * content, end = (o + 1) * content;
    taps.first[o] = begin / pixel;
    taps.offset[o] = static_cast<int64_t>(taps.weight.size());
    for (int64_t i = begin / pixel; i * pixel < end; ++i) {
      const int64_t overlap = std::min(end, (i + 1) * pixel) - std::max(begin, i * pixel);
      taps.weight.push_back(static_cast<float>(static_cast<double>(overlap) / static_cast<double>(content)));
    }
  }
  taps.offset[out] = static_cast<int64_t>(taps.weight.size());
  return taps;
}

int64_t content_or_all(int64_t content, int64_t pixels, int64_t denom) {
  return content > 0 ? content : pixels * denom;
}

void check_shrink(const PixelsHWC& in, int64_t out_height, int64_t out_width) {
  LS_CHECK(in.data != nullptr && in.channels > 0 && in.stride >= in.width * in.channels && in.content_denom > 0,
           "shrink_area: bad input (", in.height, "x", in.width, "x", in.channels, ", stride ", in.stride, ")");
  const int64_t denom = in.content_denom;
  const int64_t rows = content_or_all(in.content_height, in.height, denom);
  const int64_t cols = content_or_all(in.content_width, in.width, denom);
  LS_CHECK(rows <= in.height * denom && cols <= in.width * denom, "shrink_area: content ", rows, "/", denom, " x ",
           cols, "/", denom, " beyond the ", in.height, "x", in.width, " image");
  LS_CHECK(out_height > 0 && out_width > 0 && out_height * denom <= rows && out_width * denom <= cols,
           "shrink_area: ", in.height, "x", in.width, " to ", out_height, "x", out_width, " is not a shrink");
}

// kChannels > 0 fixes the channel count at compile time (grey and RGB, the
// common cases), so the horizontal pass keeps its sums in registers; 0 reads it.
template <int kChannels, typename Out, typename Store>
void shrink(const PixelsHWC& in, int64_t out_height, int64_t out_width, Out* out, Store store) {
  const int64_t denom = in.content_denom;
  const AxisTaps rows = area_taps(content_or_all(in.content_height, in.height, denom), denom, out_height);
  const AxisTaps cols = area_taps(content_or_all(in.content_width, in.width, denom), denom, out_width);
  const int64_t channels = kChannels > 0 ? kChannels : in.channels;
  const int64_t row_length = in.width * channels, plane = out_height * out_width;
  std::vector<float> row(static_cast<size_t>(row_length));
  float* acc = row.data();
  for (int64_t oy = 0; oy < out_height; ++oy) {
    // Vertical: the covered input rows, weighted, into one float row (contiguous: vectorises).
    const float* wy = rows.weight.data() + rows.offset[oy];
    const int64_t ny = rows.offset[oy + 1] - rows.offset[oy];
    const uint8_t* src = in.data + rows.first[oy] * in.stride;
    for (int64_t j = 0; j < row_length; ++j) acc[j] = wy[0] * static_cast<float>(src[j]);
    for (int64_t k = 1; k < ny; ++k) {
      src += in.stride;
      const float w = wy[k];
      for (int64_t j = 0; j < row_length; ++j) acc[j] += w * static_cast<float>(src[j]);
    }
    // Horizontal: each output pixel from its covered columns, written channel-major.
    Out* dst = out + oy * out_width;
    for (int64_t ox = 0; ox < out_width; ++ox) {
      const float* wx = cols.weight.data() + cols.offset[ox];
      const int64_t nx = cols.offset[ox + 1] - cols.offset[ox];
      const float* px = acc + cols.first[ox] * channels;
      if constexpr (kChannels > 0) {
        float sum[kChannels] = {};
        for (int64_t k = 0; k < nx; ++k)
          for (int c = 0; c < kChannels; ++c) sum[c] += wx[k] * px[k * kChannels + c];
        for (int c = 0; c < kChannels; ++c) dst[c * plane + ox] = store(sum[c]);
      } else {
        for (int64_t c = 0; c < channels; ++c) {
          float sum = 0.0f;
          for (int64_t k = 0; k < nx; ++k) sum += wx[k] * px[k * channels + c];
          dst[c * plane + ox] = store(sum);
        }
      }
    }
  }
}

template <typename Out, typename Store>
void shrink_any(const PixelsHWC& in, int64_t out_height, int64_t out_width, Out* out, Store store) {
  check_shrink(in, out_height, out_width);
  if (in.channels == 3)
    shrink<3>(in, out_height, out_width, out, store);
  else if (in.channels == 1)
    shrink<1>(in, out_height, out_width, out, store);
  else
    shrink<0>(in, out_height, out_width, out, store);
}

}  // namespace

void shrink_area(const PixelsHWC& in, int64_t out_height, int64_t out_width, uint8_t* out) {
  // The weights sum to 1, so a mean never exceeds 255 by more than float error.
  shrink_any(in, out_height, out_width, out, [](float v) { return static_cast<uint8_t>(std::min(v + 0.5f, 255.0f)); });
}

void shrink_area(const PixelsHWC& in, int64_t out_height, int64_t out_width, float* out, float scale) {
  shrink_any(in, out_height, out_width, out, [scale](float v) { return v * scale; });
}

}  // namespace lockstep::data
