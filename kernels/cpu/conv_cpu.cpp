#include "kernels/cpu/conv_cpu.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm_cpu.h"
#include "kernels/cpu/thread_pool.h"

namespace lockstep::cpu {

namespace {

// The outputs o in [lo, hi) whose tap o*stride + offset lands inside [0, extent):
// computing this range once per row keeps the copy loops free of bounds tests.
struct Span {
  int64_t lo, hi;
};
Span valid_outputs(int64_t offset, int64_t stride, int64_t extent, int64_t outputs) {
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t last = extent - 1 - offset;
  int64_t hi = last < 0 ? 0 : std::min(outputs, last / stride + 1);
  return {std::min(lo, hi), hi};
}

// Column matrices of up to this many floats (16 MiB) per chunk, shared out
// over the parts that run side by side.
constexpr int64_t chunk_budget_floats = int64_t(4) << 20;

// Copies each sample's [O, P] block of `nchw` (samples n0..n0+S) into the
// chunk layout [O, S*P], or back.
void to_chunk(const ConvGeometry& g, const float* nchw, int64_t samples, float* chunk) {
  const int64_t p = g.column_cols(), ld = samples * p;
  for (int64_t s = 0; s < samples; ++s)
    for (int64_t o = 0; o < g.out_channels; ++o)
      std::memcpy(chunk + o * ld + s * p, nchw + s * g.out_sample() + o * p, sizeof(float) * p);
}

// The samples are shared out over the pool's parts, each with its own slice
// of the scratch: a part unfolds, multiplies and folds its samples alone, so
// no part waits for another and OpenBLAS runs single-threaded inside each.
int conv_parts(const ConvGeometry& g) { return parallel_parts(g.batch, 1); }

// Per part: the column matrix of a chunk, its [O, S*P] product, and a private
// weight gradient [O, CKK] (backward filter).
int64_t part_scratch_floats(const ConvGeometry& g) {
  return conv_chunk_samples(g) * g.column_cols() * (g.column_rows() + g.out_channels) + g.weight_numel();
}

// Runs body(n0, samples, columns, product) for every chunk of samples of the
// batch, the chunks of one part in order on one thread.
template <class Body>
void for_each_chunk(const ConvGeometry& g, float* scratch, Body body) {
  const int64_t chunk = conv_chunk_samples(g), rows = g.column_rows(), pixels = g.column_cols();
  const int64_t per_part = part_scratch_floats(g);
  parallel_for(g.batch, 1, [&](int64_t begin, int64_t end, int part) {
    float* mine = scratch + part * per_part;
    for (int64_t n0 = begin; n0 < end; n0 += chunk) {
      const int64_t samples = std::min(chunk, end - n0);
      body(n0, samples, mine, mine + rows * samples * pixels, part);
    }
  });
}

}  // namespace

int64_t conv_chunk_samples(const ConvGeometry& g) {
  // Planes of this many pixels make a GEMM wide enough alone: one sample per
  // chunk, multiplied in place (no copies into and out of a chunk).
  constexpr int64_t wide_enough_pixels = 256;
  if (g.column_cols() >= wide_enough_pixels) return 1;
  const int64_t parts = conv_parts(g);
  const int64_t per_sample = std::max<int64_t>(1, g.column_rows() * g.column_cols());
  const int64_t samples_per_part = (std::max<int64_t>(g.batch, 1) + parts - 1) / parts;
  return std::clamp<int64_t>(chunk_budget_floats / parts / per_sample, 1, samples_per_part);
}

int64_t conv_scratch_floats(const ConvGeometry& g) { return conv_parts(g) * part_scratch_floats(g); }

void im2col(const ConvGeometry& g, const float* image, float* columns, int64_t row_stride) {
  const int64_t k = g.kernel, s = g.stride, oh_n = g.out_h, ow_n = g.out_w;
  float* out = columns;
  for (int64_t c = 0; c < g.in_channels; ++c) {
    const float* plane = image + c * g.in_h * g.in_w;
    for (int64_t ki = 0; ki < k; ++ki) {
      Span rows = valid_outputs(ki - g.padding, s, g.in_h, oh_n);
      for (int64_t kj = 0; kj < k; ++kj, out += row_stride) {
        Span cols = valid_outputs(kj - g.padding, s, g.in_w, ow_n);
        Span live = rows;
        if (cols.lo == cols.hi) live.hi = live.lo;  // this tap column never lands inside the image
        const int64_t first_iw = cols.lo * s + kj - g.padding, width = cols.hi - cols.lo;
        std::fill(out, out + live.lo * ow_n, 0.0f);
        for (int64_t oh = live.lo; oh < live.hi; ++oh) {
          float* dst = out + oh * ow_n;
          const float* src = plane + (oh * s + ki - g.padding) * g.in_w + first_iw;
          std::fill(dst, dst + cols.lo, 0.0f);
          if (s == 1) {
            std::memcpy(dst + cols.lo, src, sizeof(float) * width);
          } else {
            for (int64_t i = 0; i < width; ++i) dst[cols.lo + i] = src[i * s];
          }
          std::fill(dst + cols.hi, dst + ow_n, 0.0f);
        }
        std::fill(out + live.hi * ow_n, out + oh_n * ow_n, 0.0f);
      }
    }
  }
}

void col2im_add(const ConvGeometry& g, const float* columns, int64_t row_stride, float* image) {
  const int64_t k = g.kernel, s = g.stride, oh_n = g.out_h, ow_n = g.out_w;
  const float* in = columns;
  for (int64_t c = 0; c < g.in_channels; ++c) {
    float* plane = image + c * g.in_h * g.in_w;
    for (int64_t ki = 0; ki < k; ++ki) {
      Span rows = valid_outputs(ki - g.padding, s, g.in_h, oh_n);
      for (int64_t kj = 0; kj < k; ++kj, in += row_stride) {
        Span cols = valid_outputs(kj - g.padding, s, g.in_w, ow_n);
        if (cols.lo == cols.hi) continue;
        const int64_t first_iw = cols.lo * s + kj - g.padding, width = cols.hi - cols.lo;
        for (int64_t oh = rows.lo; oh < rows.hi; ++oh) {
          const float* src = in + oh * ow_n + cols.lo;
          float* dst = plane + (oh * s + ki - g.padding) * g.in_w + first_iw;
          if (s == 1) {
            for (int64_t i = 0; i < width; ++i) dst[i] += src[i];
          } else {
            for (int64_t i = 0; i < width; ++i) dst[i * s] += src[i];
          }
        }
      }
    }
  }
}

// A chunk of one sample multiplies straight out of and into the NCHW tensors
// (a sample's [O, P] block is already the chunk layout), and a pointwise
// convolution's column matrix is the sample itself: no copies at all.
namespace {
const float* sample_columns(const ConvGeometry& g, const float* x, int64_t n0, int64_t samples, float* columns) {
  if (samples == 1 && g.is_pointwise()) return x + n0 * g.in_sample();
  const int64_t pixels = g.column_cols();
  for (int64_t s = 0; s < samples; ++s) im2col(g, x + (n0 + s) * g.in_sample(), columns + s * pixels, samples * pixels);
  return columns;
}

const float* chunk_of(const ConvGeometry& g, const float* nchw, int64_t n0, int64_t samples, float* chunk) {
  if (samples == 1) return nchw + n0 * g.out_sample();
  to_chunk(g, nchw + n0 * g.out_sample(), samples, chunk);
  return chunk;
}
}  // namespace

void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y,
                    float* scratch) {
  const int64_t rows = g.column_rows(), pixels = g.column_cols();
  for_each_chunk(g, scratch, [&](int64_t n0, int64_t samples, float* columns, float* product, int) {
    const int64_t ld = samples * pixels;
    const float* cols = sample_columns(g, x, n0, samples, columns);
    float* out = samples == 1 ? y + n0 * g.out_sample() : product;
    // out [O, S*P] = w [O, CKK] * columns [CKK, S*P]
    sgemm(false, false, g.out_channels, ld, rows, 1.0f, w, rows, cols, ld, 0.0f, out, ld);
    if (samples == 1 && !bias) return;
    for (int64_t s = 0; s < samples; ++s)
      for (int64_t o = 0; o < g.out_channels; ++o) {
        const float* src = out + o * ld + s * pixels;
        float* dst = y + (n0 + s) * g.out_sample() + o * pixels;
        const float b = bias ? bias[o] : 0.0f;
        for (int64_t p = 0; p < pixels; ++p) dst[p] = src[p] + b;
      }
  });
}

void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx, bool accumulate,
                          float* scratch) {
  const int64_t rows = g.column_rows(), pixels = g.column_cols();
  for_each_chunk(g, scratch, [&](int64_t n0, int64_t samples, float* columns, float* dy_chunk, int) {
    const int64_t ld = samples * pixels;
    const float* dyc = chunk_of(g, dy, n0, samples, dy_chunk);
    if (samples == 1 && g.is_pointwise()) {
      // dx_n [C, P] (+)= w^T [C, O] * dy_n [O, P]: the columns are the input.
      sgemm(true, false, rows, ld, g.out_channels, 1.0f, w, rows, dyc, ld, accumulate ? 1.0f : 0.0f,
            dx + n0 * g.in_sample(), ld);
      return;
    }
    // dcolumns [CKK, S*P] = w^T [CKK, O] * dy [O, S*P]
    sgemm(true, false, rows, ld, g.out_channels, 1.0f, w, rows, dyc, ld, 0.0f, columns, ld);
    for (int64_t s = 0; s < samples; ++s) {
      float* dxn = dx + (n0 + s) * g.in_sample();
      if (!accumulate) std::fill(dxn, dxn + g.in_sample(), 0.0f);
      col2im_add(g, columns + s * pixels, ld, dxn);
    }
  });
}

void conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw, float* scratch) {
  const int64_t rows = g.column_rows(), pixels = g.column_cols(), weights = g.weight_numel();
  const int64_t per_part = part_scratch_floats(g);
  const int parts = conv_parts(g);
  // Part p sums its samples' gradient into its own [O, CKK] (part 0 straight
  // into dw); the parts are then added in part order, so the result depends
  // on the thread count but not on timing.
  auto part_dw = [&](int part) { return part == 0 ? dw : scratch + part * per_part + per_part - weights; };
  for (int p = 0; p < parts; ++p) std::fill(part_dw(p), part_dw(p) + weights, 0.0f);
  for_each_chunk(g, scratch, [&](int64_t n0, int64_t samples, float* columns, float* dy_chunk, int part) {
    const int64_t ld = samples * pixels;
    const float* cols = sample_columns(g, x, n0, samples, columns);
    const float* dyc = chunk_of(g, dy, n0, samples, dy_chunk);
    // dw_part [O, CKK] += dy [O, S*P] * columns^T [S*P, CKK]
    sgemm(false, true, g.out_channels, rows, ld, 1.0f, dyc, ld, cols, ld, 1.0f, part_dw(part), rows);
  });
  if (parts > 1)
    parallel_for(weights, 4096, [&](int64_t begin, int64_t end, int) {
      for (int p = 1; p < parts; ++p) {
        const float* src = part_dw(p);
        for (int64_t i = begin; i < end; ++i) dw[i] += src[i];
      }
    });
}

}  // namespace lockstep::cpu
