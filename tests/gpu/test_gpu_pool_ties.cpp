// bf16 max pooling with exact ties in every window: cuDNN (its deterministic
// max mode) must pick the same element as the CPU's first-max rule, so the
// backward sends each window's gradient to the same input element.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "bf16_kernel_check.h"
#include "ops/pool.h"

using namespace lockstep;
using namespace lockstep::testing::bf16_kernels;
using lockstep::testing::random_values;

namespace {

// The input elements (NCHW offsets within one image plane) of window (oh, ow).
std::vector<int64_t> window_cells(const Shape& s, const PoolWindow& w, int64_t oh, int64_t ow) {
  std::vector<int64_t> cells;
  for (int64_t kh = 0; kh < w.kernel; ++kh)
    for (int64_t kw = 0; kw < w.kernel; ++kw) {
      const int64_t h = oh * w.stride - w.padding + kh, c = ow * w.stride - w.padding + kw;
      if (h >= 0 && h < s[2] && c >= 0 && c < s[3]) cells.push_back(h * s[3] + c);
    }
  return cells;
}

// Each plane holds two bf16-exact levels, low and high; a window whose
// maximum appears once gets a second one, so every window's maximum is tied.
std::vector<float> tied_values(const Shape& s, const PoolWindow& w, uint64_t seed) {
  const Shape ys = ops::pool_output_shape("test", s, w);
  const std::vector<float> draw = random_values(s.numel(), seed);
  std::vector<float> x(s.numel());
  const int64_t plane = s[2] * s[3];
  for (int64_t p = 0; p < s[0] * s[1]; ++p) {
    const float low = -1.5f * static_cast<float>(p % 5 + 1), high = 2.25f * static_cast<float>(p % 3 + 1);
    float* v = x.data() + p * plane;
    for (int64_t i = 0; i < plane; ++i) v[i] = draw[p * plane + i] > 0.2f ? low : high;
    // Raising a cell to high never removes a tie elsewhere: repeat until settled.
    for (bool changed = true; changed;) {
      changed = false;
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          const std::vector<int64_t> cells = window_cells(s, w, oh, ow);
          const auto highs = std::count_if(cells.begin(), cells.end(), [&](int64_t c) { return v[c] == high; });
          if (highs != 1) continue;
          for (int64_t c : cells)
            if (v[c] != high) {
              v[c] = high;
              changed = true;
              break;
            }
        }
    }
  }
  return x;
}

// Whether every window of every plane holds its maximum twice or more.
bool every_window_tied(const Shape& s, const PoolWindow& w, const std::vector<float>& x) {
  const Shape ys = ops::pool_output_shape("test", s, w);
  const int64_t plane = s[2] * s[3];
  for (int64_t p = 0; p < s[0] * s[1]; ++p)
    for (int64_t oh = 0; oh < ys[2]; ++oh)
      for (int64_t ow = 0; ow < ys[3]; ++ow) {
        const float* v = x.data() + p * plane;
        const std::vector<int64_t> cells = window_cells(s, w, oh, ow);
        float top = v[cells[0]];
        for (int64_t c : cells) top = std::max(top, v[c]);
        if (std::count_if(cells.begin(), cells.end(), [&](int64_t c) { return v[c] == top; }) < 2) return false;
      }
  return true;
}

}  // namespace

TEST_CASE("gpu bf16 max pooling with ties in every window picks the cpu's first maximum", "[gpu][bf16][pool]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  for (const PoolWindow& w : {PoolWindow{3, 2, 1}, PoolWindow{3, 1, 1}, PoolWindow{2, 2, 0}}) {
    const Shape s{2, 3, 7, 8};
    const Shape ys = ops::pool_output_shape("test", s, w);
    const std::vector<float> x = tied_values(s, w, 31);
    REQUIRE(every_window_tied(s, w, x));
    // Small integers as dy: their sums are exact in bf16, so only where each
    // window's gradient goes can make the GPU differ from the CPU.
    std::vector<float> dy = random_values(ys.numel(), 32, 1.0f, 9.0f);
    for (float& d : dy) d = static_cast<float>(static_cast<int>(d));
    Tensor cx = f32_on_cpu(s, x), cy = f32_on_cpu(ys, std::vector<float>(ys.numel()));
    Tensor cdx = f32_on_cpu(s, std::vector<float>(s.numel()));
    ops::max_pool2d_forward(cpu, cx, cy, w);
    ops::max_pool2d_backward(cpu, cx, cy, f32_on_cpu(ys, dy), cdx, w, false);
    for (MemoryFormat format : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
      INFO("kernel " << w.kernel << " stride " << w.stride << " padding " << w.padding << ", "
                     << memory_format_name(format));
      Tensor gx = bf16_on_gpu(s, in_format(s, x, format), 0, format);
      Tensor gy = bf16_on_gpu(ys, std::vector<float>(ys.numel()), 0, format);
      Tensor gdx = bf16_on_gpu(s, std::vector<float>(s.numel()), 0, format);
      ops::max_pool2d_forward(gpu, gx, gy, w);
      ops::max_pool2d_backward(gpu, gx, gy, bf16_on_gpu(ys, in_format(ys, dy, format), 0, format), gdx, w, false);
      gpu.synchronize();
      require_bits(gy.to_vector(), in_format(ys, cy.to_vector(), format), "forward");
      require_bits(gdx.to_vector(), in_format(s, cdx.to_vector(), format), "backward");
    }
  }
}
