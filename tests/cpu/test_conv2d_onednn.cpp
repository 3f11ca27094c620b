// The oneDNN convolution (kernels/cpu/dnnl/conv_dnnl.h) against the im2col +
// OpenBLAS reference (kernels/cpu/conv_cpu.h), which the golden tests hold
// against PyTorch: forward with and without bias, the data gradient written
// and accumulated, the weight gradient, for the geometries the models use
// (3x3 stride 1 and 2, 1x1 shortcuts, a 3-channel stem, a 5x5 without
// padding, odd sizes, one sample) on 1 and 2 threads, with NCHW images and
// with channels-last ones (oneDNN's own kernels for those, no reorders;
// transposed here with loops of the test's own). Only in a build with oneDNN:
// without it the reference is the CPU convolution.
#include <catch2/catch.hpp>

#if LOCKSTEP_WITH_DNNL

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/conv_cpu.h"
#include "kernels/cpu/dnnl/conv_dnnl.h"
#include "kernels/cpu/thread_pool.h"
#include "support/compute_threads.h"
#include "support/image_layouts.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

std::vector<float> normal_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

std::vector<float> absolute(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

// Both sum the same products in different orders, so they differ by float
// rounding, which grows with the sum of the products' magnitudes: `scale` is
// that sum (the reference run on the operands' absolute values). 1e-5 of it
// is about 170 float epsilons, well above the rounding of the up to 1,020
// terms summed here and far below any wrong tap or sample.
void check_close(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& scale,
                 const char* what) {
  REQUIRE(got.size() == want.size());
  int bad = 0;
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]) / (double(scale[i]) + 1e-30);
    worst = std::max(worst, err);
    if (!(err < 1e-5)) ++bad;
  }
  INFO(what << ": worst error " << worst << " of the sum of magnitudes");
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("the oneDNN convolution equals the im2col reference forward and backward", "[conv2d][onednn]") {
  struct Case {
    int64_t batch, channels, h, w, out;
    int kernel, stride, padding;
  };
  const Case cases[] = {
      {6, 16, 12, 12, 16, 3, 1, 1},  // a resnet20 stage-1 convolution
      {5, 16, 12, 12, 32, 3, 2, 1},  // the stride-2 convolution opening a stage
      {5, 16, 12, 12, 32, 1, 2, 0},  // its 1x1 shortcut
      {4, 3, 17, 15, 16, 3, 1, 1},   // a 3-channel stem on an odd image
      {3, 5, 13, 11, 7, 5, 1, 0},    // 5x5 without padding, odd channel counts
      {1, 64, 4, 4, 64, 3, 1, 1},    // one sample, wide channels
      {7, 8, 9, 9, 12, 1, 1, 0},     // pointwise
      {2, 3, 20, 20, 8, 7, 2, 3},    // resnet50's 7x7 stride-2 stem (uneven right padding)
  };
  // The cache is per thread, and tests run before this one in the same
  // process (the whole binary at once) may have left geometries of their own.
  const int cached_before = cpu::dnnl_cached_geometries();
  for (const Case& c : cases) {
    ConvGeometry g;
    REQUIRE(ConvGeometry::make(c.batch, c.channels, c.h, c.w, c.out, c.kernel, c.stride, c.padding, g).empty());
    const auto x = normal_floats(size_t(g.batch * g.in_sample()), 1), w = normal_floats(size_t(g.weight_numel()), 2);
    const auto bias = normal_floats(size_t(g.out_channels), 3), dy = normal_floats(size_t(g.batch * g.out_sample()), 4);
    const auto dx_start = normal_floats(x.size(), 5);
    std::vector<float> scratch(size_t(cpu::conv_scratch_floats(g)));
    std::vector<float> y_ref(dy.size()), yb_ref(dy.size()), dx_ref(x.size()), dxa_ref = dx_start, dw_ref(w.size());
    cpu::conv2d_forward(g, x.data(), w.data(), nullptr, y_ref.data(), scratch.data());
    cpu::conv2d_forward(g, x.data(), w.data(), bias.data(), yb_ref.data(), scratch.data());
    cpu::conv2d_backward_data(g, dy.data(), w.data(), dx_ref.data(), false, scratch.data());
    cpu::conv2d_backward_data(g, dy.data(), w.data(), dxa_ref.data(), true, scratch.data());
    cpu::conv2d_backward_filter(g, x.data(), dy.data(), dw_ref.data(), scratch.data());
    const auto ax = absolute(x), aw = absolute(w), abias = absolute(bias), ady = absolute(dy);
    std::vector<float> y_mag(dy.size()), yb_mag(dy.size()), dx_mag(x.size()), dxa_mag = absolute(dx_start),
        dw_mag(w.size());
    cpu::conv2d_forward(g, ax.data(), aw.data(), nullptr, y_mag.data(), scratch.data());
    cpu::conv2d_forward(g, ax.data(), aw.data(), abias.data(), yb_mag.data(), scratch.data());
    cpu::conv2d_backward_data(g, ady.data(), aw.data(), dx_mag.data(), false, scratch.data());
    cpu::conv2d_backward_data(g, ady.data(), aw.data(), dxa_mag.data(), true, scratch.data());
    cpu::conv2d_backward_filter(g, ax.data(), ady.data(), dw_mag.data(), scratch.data());
    const int64_t in_spatial = g.in_h * g.in_w, out_spatial = g.out_h * g.out_w;
    for (MemoryFormat format : {MemoryFormat::nchw, MemoryFormat::nhwc})
      for (int threads : {1, 2}) {
        ComputeThreadsFor pool(threads);
        INFO(memory_format_name(format) << ", " << threads << " thread(s); " << g.batch << "x" << g.in_channels << "x"
                                        << g.in_h << "x" << g.in_w << " to " << g.out_channels << ", kernel "
                                        << g.kernel << " stride " << g.stride << " padding " << g.padding);
        const bool nhwc = format == MemoryFormat::nhwc;
        // Images in the format, and back to NCHW for the comparison.
        const auto image_in = [&](const std::vector<float>& v, int64_t c, int64_t spatial) {
          return nhwc ? to_nhwc(v, g.batch, c, spatial) : v;
        };
        const auto image_out = [&](const std::vector<float>& v, int64_t c, int64_t spatial) {
          return nhwc ? to_nchw(v, g.batch, c, spatial) : v;
        };
        const auto xf = image_in(x, g.in_channels, in_spatial), dyf = image_in(dy, g.out_channels, out_spatial);
        // Twice, so the second call runs on the primitives and buffers the first one kept.
        for (int round = 0; round < 2; ++round) {
          std::vector<float> y(dy.size(), 42.0f), yb(dy.size(), 42.0f), dx(x.size(), 42.0f),
              dxa = image_in(dx_start, g.in_channels, in_spatial), dw(w.size(), 42.0f);
          cpu::dnnl_conv2d_forward(g, xf.data(), w.data(), nullptr, y.data(), format);
          cpu::dnnl_conv2d_forward(g, xf.data(), w.data(), bias.data(), yb.data(), format);
          cpu::dnnl_conv2d_backward_data(g, dyf.data(), w.data(), dx.data(), false, format);
          cpu::dnnl_conv2d_backward_data(g, dyf.data(), w.data(), dxa.data(), true, format);
          cpu::dnnl_conv2d_backward_filter(g, xf.data(), dyf.data(), dw.data(), format);
          check_close(image_out(y, g.out_channels, out_spatial), y_ref, y_mag, "forward");
          check_close(image_out(yb, g.out_channels, out_spatial), yb_ref, yb_mag, "forward with bias");
          check_close(image_out(dx, g.in_channels, in_spatial), dx_ref, dx_mag, "data gradient");
          check_close(image_out(dxa, g.in_channels, in_spatial), dxa_ref, dxa_mag, "data gradient added onto another");
          check_close(dw, dw_ref, dw_mag, "weight gradient");
        }
      }
  }
  // One geometry with bias and one without per case and format, kept by this thread.
  CHECK(cpu::dnnl_cached_geometries() - cached_before == 4 * int(std::size(cases)));
}

TEST_CASE("the oneDNN convolution gives the same bits again on the same thread count", "[conv2d][onednn]") {
  ConvGeometry g;
  REQUIRE(ConvGeometry::make(8, 16, 16, 16, 16, 3, 1, 1, g).empty());
  const auto x = normal_floats(size_t(g.batch * g.in_sample()), 7), dy = normal_floats(size_t(g.batch * g.out_sample()), 8);
  std::vector<float> first(size_t(g.weight_numel())), again(first.size());
  ComputeThreadsFor pool(2);
  cpu::dnnl_conv2d_backward_filter(g, x.data(), dy.data(), first.data());
  cpu::dnnl_conv2d_backward_filter(g, x.data(), dy.data(), again.data());
  CHECK(first == again);
}

#endif  // LOCKSTEP_WITH_DNNL
