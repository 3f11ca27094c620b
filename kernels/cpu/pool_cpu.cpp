#include "kernels/cpu/pool_cpu.h"

#include <algorithm>
#include <limits>

#include "kernels/cpu/thread_pool.h"
#include "kernels/elementwise_math.h"

namespace lockstep::cpu {

namespace {

// Index (within the plane) of the arg-max of output (oh, ow)'s window.
int64_t window_argmax(const float* plane, const PoolGeometry& g, int64_t oh, int64_t ow) {
  PoolSpan rows = pool_span(oh, g.in_h, g.window), cols = pool_span(ow, g.in_w, g.window);
  float best = -std::numeric_limits<float>::infinity();
  int64_t best_at = rows.begin * g.in_w + cols.begin;  // padding <= kernel/2: the span is never empty
  for (int64_t h = rows.begin; h < rows.end; ++h)
    for (int64_t w = cols.begin; w < cols.end; ++w)
      if (pool_max_takes(plane[h * g.in_w + w], best)) {
        best = plane[h * g.in_w + w];
        best_at = h * g.in_w + w;
      }
  return best_at;
}

float window_sum(const float* plane, const PoolGeometry& g, int64_t oh, int64_t ow) {
  PoolSpan rows = pool_span(oh, g.in_h, g.window), cols = pool_span(ow, g.in_w, g.window);
  float sum = 0.0f;
  for (int64_t h = rows.begin; h < rows.end; ++h)
    for (int64_t w = cols.begin; w < cols.end; ++w) sum += plane[h * g.in_w + w];
  return sum;
}

// Write mode clears dx first, so both modes can scatter-add afterwards.
void prepare_grad(float* dx, int64_t n, bool accumulate) {
  if (!accumulate) std::fill(dx, dx + n, 0.0f);
}

// The common 2x2 window at stride 2 without padding, as a straight loop: the
// same comparisons in the same order as window_argmax (row by row, left to
// right), so the result and the arg-max are identical, only without the
// per-window span arithmetic.
bool is_plain_2x2(const PoolGeometry& g) {
  return g.window.kernel == 2 && g.window.stride == 2 && g.window.padding == 0;
}

template <class Visit>  // visit(output index, input index of the window's max)
void plain_2x2_argmax(const float* plane, const PoolGeometry& g, Visit visit) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const float* r0 = plane + 2 * oh * g.in_w;
    const float* r1 = r0 + g.in_w;
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const int64_t c = 2 * ow;
      int64_t at = c;
      float best = r0[c];
      // Selects rather than branches: on real data the winner is random.
      auto consider = [&](float v, int64_t i) {
        // pool_max_takes without its short-circuit, which the compiler turns into branches
        const bool takes = (v > best) | ((v != v) & (best == best));
        best = takes ? v : best;
        at = takes ? i : at;
      };
      consider(r0[c + 1], c + 1);
      consider(r1[c], g.in_w + c);
      consider(r1[c + 1], g.in_w + c + 1);
      visit(oh * g.out_w + ow, 2 * oh * g.in_w + at);
    }
  }
}

}  // namespace

void max_pool2d_forward(const float* x, float* y, const PoolGeometry& g) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  parallel_items(g.planes, in_plane, [&](int64_t p) {
    const float* plane = x + p * in_plane;
    if (is_plain_2x2(g)) {
      float* out = y + p * out_plane;
      plain_2x2_argmax(plane, g, [&](int64_t o, int64_t i) { out[o] = plane[i]; });
      return;
    }
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        y[p * out_plane + oh * g.out_w + ow] = plane[window_argmax(plane, g, oh, ow)];
  });
}

void max_pool2d_backward(const float* x, const float* dy, float* dx, const PoolGeometry& g, bool accumulate) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  // Planes are independent: each part clears and scatters into its own.
  parallel_items(g.planes, in_plane, [&](int64_t p) {
    prepare_grad(dx + p * in_plane, in_plane, accumulate);
    if (is_plain_2x2(g)) {
      float* grad = dx + p * in_plane;
      const float* up = dy + p * out_plane;
      plain_2x2_argmax(x + p * in_plane, g, [&](int64_t o, int64_t i) { grad[i] += up[o]; });
      return;
    }
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        dx[p * in_plane + window_argmax(x + p * in_plane, g, oh, ow)] += dy[p * out_plane + oh * g.out_w + ow];
  });
}

void avg_pool2d_forward(const float* x, float* y, const PoolGeometry& g) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const float inv_area = 1.0f / static_cast<float>(g.window.kernel * g.window.kernel);
  parallel_items(g.planes, in_plane, [&](int64_t p) {
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        y[p * out_plane + oh * g.out_w + ow] = window_sum(x + p * in_plane, g, oh, ow) * inv_area;
  });
}

void avg_pool2d_backward(const float* dy, float* dx, const PoolGeometry& g, bool accumulate) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const float inv_area = 1.0f / static_cast<float>(g.window.kernel * g.window.kernel);
  parallel_items(g.planes, in_plane, [&](int64_t p) {
    prepare_grad(dx + p * in_plane, in_plane, accumulate);
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        float share = dy[p * out_plane + oh * g.out_w + ow] * inv_area;
        PoolSpan rows = pool_span(oh, g.in_h, g.window), cols = pool_span(ow, g.in_w, g.window);
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t w = cols.begin; w < cols.end; ++w) dx[p * in_plane + h * g.in_w + w] += share;
      }
  });
}

void global_avg_pool_forward(const float* x, float* y, int64_t planes, int64_t plane_size) {
  parallel_items(planes, plane_size, [&](int64_t p) {
    // Summed in double: a plane can be large (a 32x32 or 56x56 feature map).
    double sum = 0.0;
    for (int64_t i = 0; i < plane_size; ++i) sum += x[p * plane_size + i];
    y[p] = static_cast<float>(sum / static_cast<double>(plane_size));
  });
}

void global_avg_pool_backward(const float* dy, float* dx, int64_t planes, int64_t plane_size, bool accumulate) {
  const float inv_size = 1.0f / static_cast<float>(plane_size);
  parallel_items(planes, plane_size, [&](int64_t p) {
    float share = dy[p] * inv_size;
    for (int64_t i = 0; i < plane_size; ++i) store_grad(dx[p * plane_size + i], share, accumulate);
  });
}

void adaptive_avg_pool2d_forward(const float* x, float* y, int64_t planes, int64_t in_h, int64_t in_w, int64_t out_h,
                                 int64_t out_w) {
  const int64_t in_plane = in_h * in_w, out_plane = out_h * out_w;
  parallel_items(planes, in_plane + out_plane, [&](int64_t p) {
    for (int64_t oh = 0; oh < out_h; ++oh)
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const PoolSpan rows = adaptive_pool_span(oh, in_h, out_h), cols = adaptive_pool_span(ow, in_w, out_w);
        float sum = 0.0f;
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t w = cols.begin; w < cols.end; ++w) sum += x[p * in_plane + h * in_w + w];
        y[p * out_plane + oh * out_w + ow] =
            sum / static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin));
      }
  });
}

void adaptive_avg_pool2d_backward(const float* dy, float* dx, int64_t planes, int64_t in_h, int64_t in_w,
                                  int64_t out_h, int64_t out_w, bool accumulate) {
  const int64_t in_plane = in_h * in_w, out_plane = out_h * out_w;
  parallel_items(planes, in_plane + out_plane, [&](int64_t p) {
    prepare_grad(dx + p * in_plane, in_plane, accumulate);
    for (int64_t oh = 0; oh < out_h; ++oh)
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const PoolSpan rows = adaptive_pool_span(oh, in_h, out_h), cols = adaptive_pool_span(ow, in_w, out_w);
        const float share = dy[p * out_plane + oh * out_w + ow] /
                            static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin));
        for (int64_t h = rows.begin; h < rows.end; ++h)
          for (int64_t w = cols.begin; w < cols.end; ++w) dx[p * in_plane + h * in_w + w] += share;
      }
  });
}

}  // namespace lockstep::cpu
