#include "emu/cudnn/direct_math.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace lockstep::emu::cudnn {

namespace {

// The input row (or column) that output position `o` reads through kernel tap `k`.
int64_t source(int64_t o, int64_t k, int64_t stride, int64_t padding) { return o * stride - padding + k; }

// The input span a pooling window at output position `o` covers, clipped to the plane.
struct Span {
  int64_t begin, end;
};
Span window(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
  const int64_t begin = o * stride - padding;
  return {std::max<int64_t>(begin, 0), std::min<int64_t>(begin + kernel, in)};
}

// Where the maximum of a window lies: the first NaN if any, else the first
// of the largest values (row by row, left to right).
int64_t argmax(const DirectPool& g, const float* plane, int64_t oh, int64_t ow) {
  const Span rows = window(oh, g.in_h, g.kernel, g.stride, g.padding);
  const Span cols = window(ow, g.in_w, g.kernel, g.stride, g.padding);
  int64_t best = rows.begin * g.in_w + cols.begin;
  for (int64_t h = rows.begin; h < rows.end; ++h)
    for (int64_t w = cols.begin; w < cols.end; ++w) {
      const int64_t i = h * g.in_w + w;
      if (std::isnan(plane[best])) return best;
      if (std::isnan(plane[i]) || plane[i] > plane[best]) best = i;
    }
  return best;
}

}  // namespace

int64_t direct_conv_columns(const DirectConv& g) {
  return g.in_channels * g.kernel * g.kernel * g.out_h * g.out_w;
}

namespace {

// One sample [C, H, W] unfolded into columns [C*K*K, OH*OW] (zeros where a
// tap reads the padding), or, folding, the columns added back onto the pixels.
template <bool kFold>
void unfold(const DirectConv& g, const float* image_in, float* image_out, float* columns) {
  const int64_t pixels = g.out_h * g.out_w;
  for (int64_t c = 0; c < g.in_channels; ++c)
    for (int64_t kh = 0; kh < g.kernel; ++kh)
      for (int64_t kw = 0; kw < g.kernel; ++kw) {
        float* row = columns + ((c * g.kernel + kh) * g.kernel + kw) * pixels;
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          const int64_t ih = source(oh, kh, g.stride, g.padding);
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const int64_t iw = source(ow, kw, g.stride, g.padding);
            const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
            float& column = row[oh * g.out_w + ow];
            if constexpr (kFold) {
              if (inside) image_out[(c * g.in_h + ih) * g.in_w + iw] += column;
            } else {
              column = inside ? image_in[(c * g.in_h + ih) * g.in_w + iw] : 0.0f;
            }
          }
        }
      }
}

}  // namespace

void direct_conv_forward(const DirectConv& g, const float* x, const float* w, float* y, float* columns) {
  const int64_t rows = g.in_channels * g.kernel * g.kernel, pixels = g.out_h * g.out_w;
  for (int64_t n = 0; n < g.batch; ++n) {
    unfold<false>(g, x + n * g.in_channels * g.in_h * g.in_w, nullptr, columns);
    // y_n [O, OH*OW] = w [O, CKK] columns [CKK, OH*OW]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(g.out_channels), int(pixels), int(rows), 1.0f, w,
                int(rows), columns, int(pixels), 0.0f, y + n * g.out_channels * pixels, int(pixels));
  }
}

void direct_conv_backward_data(const DirectConv& g, const float* dy, const float* w, float* dx, float* columns) {
  const int64_t rows = g.in_channels * g.kernel * g.kernel, pixels = g.out_h * g.out_w;
  const int64_t sample = g.in_channels * g.in_h * g.in_w;
  std::fill(dx, dx + g.batch * sample, 0.0f);
  for (int64_t n = 0; n < g.batch; ++n) {
    // columns [CKK, OH*OW] = w^T [CKK, O] dy_n [O, OH*OW], then folded onto the pixels.
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(rows), int(pixels), int(g.out_channels), 1.0f, w,
                int(rows), dy + n * g.out_channels * pixels, int(pixels), 0.0f, columns, int(pixels));
    unfold<true>(g, nullptr, dx + n * sample, columns);
  }
}

void direct_conv_backward_filter(const DirectConv& g, const float* x, const float* dy, float* dw, float* columns) {
  const int64_t rows = g.in_channels * g.kernel * g.kernel, pixels = g.out_h * g.out_w;
  for (int64_t n = 0; n < g.batch; ++n) {
    unfold<false>(g, x + n * g.in_channels * g.in_h * g.in_w, nullptr, columns);
    // dw [O, CKK] (+)= dy_n [O, OH*OW] columns^T [OH*OW, CKK], samples in order.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(g.out_channels), int(rows), int(pixels), 1.0f,
                dy + n * g.out_channels * pixels, int(pixels), columns, int(pixels), n == 0 ? 0.0f : 1.0f, dw,
                int(rows));
  }
  if (g.batch == 0) std::fill(dw, dw + g.out_channels * rows, 0.0f);
}

void direct_max_pool_forward(const DirectPool& g, const float* x, float* y) {
  for (int64_t p = 0; p < g.planes; ++p) {
    const float* plane = x + p * g.in_h * g.in_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        y[(p * g.out_h + oh) * g.out_w + ow] = plane[argmax(g, plane, oh, ow)];
  }
}

void direct_max_pool_backward(const DirectPool& g, const float* x, const float* dy, float* dx) {
  std::vector<double> sums(size_t(g.planes * g.in_h * g.in_w), 0.0);
  for (int64_t p = 0; p < g.planes; ++p) {
    const float* plane = x + p * g.in_h * g.in_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        sums[size_t(p * g.in_h * g.in_w + argmax(g, plane, oh, ow))] += dy[(p * g.out_h + oh) * g.out_w + ow];
  }
  for (size_t i = 0; i < sums.size(); ++i) dx[i] = float(sums[i]);
}

void direct_avg_pool_forward(const DirectPool& g, const float* x, float* y) {
  const double area = double(g.kernel * g.kernel);  // the padding counts (COUNT_INCLUDE_PADDING)
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const Span rows = window(oh, g.in_h, g.kernel, g.stride, g.padding);
        const Span cols = window(ow, g.in_w, g.kernel, g.stride, g.padding);
        double sum = 0.0;
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t w = cols.begin; w < cols.end; ++w) sum += x[(p * g.in_h + h) * g.in_w + w];
        y[(p * g.out_h + oh) * g.out_w + ow] = float(sum / area);
      }
}

void direct_avg_pool_backward(const DirectPool& g, const float* dy, float* dx) {
  const double area = double(g.kernel * g.kernel);
  std::vector<double> sums(size_t(g.planes * g.in_h * g.in_w), 0.0);
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const Span rows = window(oh, g.in_h, g.kernel, g.stride, g.padding);
        const Span cols = window(ow, g.in_w, g.kernel, g.stride, g.padding);
        const double share = dy[(p * g.out_h + oh) * g.out_w + ow] / area;
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t w = cols.begin; w < cols.end; ++w) sums[size_t((p * g.in_h + h) * g.in_w + w)] += share;
      }
  for (size_t i = 0; i < sums.size(); ++i) dx[i] = float(sums[i]);
}

}  // namespace lockstep::emu::cudnn
