// The CPU batch norm on channels-last images (kernels/cpu/batchnorm_cpu.h,
// format nhwc) against the same kernels on the NCHW images: its sums run in
// the NCHW loops' order, so every output, statistic and gradient must be
// NCHW's bits, once transposed back (by loops of the test's own). Every entry
// point: the statistics, the three forwards and their backwards (written and
// added, with and without the input gradient, the shortcut's gradient written
// and added), inference, and the two halves synchronised batch norm uses; on
// 1 and 2 threads, with plane sizes that leave the lanes a remainder.
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "kernels/cpu/batchnorm_cpu.h"
#include "support/compute_threads.h"
#include "support/image_layouts.h"

using namespace lockstep;

namespace {

std::vector<float> normal_floats(size_t n, uint32_t seed, float mean = 0.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(mean, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

struct Images {
  int64_t n, c, spatial;
  std::vector<float> to_nhwc(const std::vector<float>& v) const { return testing::to_nhwc(v, n, c, spatial); }
  std::vector<float> to_nchw(const std::vector<float>& v) const { return testing::to_nchw(v, n, c, spatial); }
};

}  // namespace

TEST_CASE("cpu batch norm on nhwc images gives the bits of nchw", "[batchnorm][nhwc]") {
  const MemoryFormat nhwc = MemoryFormat::nhwc, nchw = MemoryFormat::nchw;
  struct Case {
    int64_t n, c, spatial;
  };
  // 35 and 49 pixels leave the 8 and 16 lanes a remainder; one sample; 1x1 maps.
  for (const Case& k : {Case{5, 16, 35}, Case{3, 24, 49}, Case{1, 8, 64}, Case{12, 32, 1}})
    for (int threads : {1, 2}) {
      testing::ComputeThreadsFor pool(threads);
      INFO(k.n << " samples, " << k.c << " channels, " << k.spatial << " pixels, " << threads << " thread(s)");
      const Images im{k.n, k.c, k.spatial};
      const size_t size = size_t(k.n * k.c * k.spatial), c = size_t(k.c);
      const auto x = normal_floats(size, 1, 3.0f), dy = normal_floats(size, 2), shortcut = normal_floats(size, 3);
      const auto gamma = normal_floats(c, 4), beta = normal_floats(c, 5), start = normal_floats(size, 6);
      const auto xr = im.to_nhwc(x), dyr = im.to_nhwc(dy), shortcutr = im.to_nhwc(shortcut);

      std::vector<float> mean(c), var(c), inv(c), mean_r(c), var_r(c), inv_r(c);
      cpu::batchnorm_batch_stats(x.data(), k.n, k.c, k.spatial, 1e-5f, mean.data(), var.data(), inv.data(), nchw);
      cpu::batchnorm_batch_stats(xr.data(), k.n, k.c, k.spatial, 1e-5f, mean_r.data(), var_r.data(), inv_r.data(),
                                 nhwc);
      CHECK(mean_r == mean);
      CHECK(var_r == var);
      CHECK(inv_r == inv);

      // The forwards and inference.
      const auto forward = [&](auto run) {
        std::vector<float> y(size), yr(size);
        run(x.data(), shortcut.data(), y.data(), nchw);
        run(xr.data(), shortcutr.data(), yr.data(), nhwc);
        CHECK(im.to_nchw(yr) == y);
      };
      forward([&](const float* in, const float*, float* y, MemoryFormat f) {
        cpu::batchnorm_normalize(in, k.n, k.c, k.spatial, mean.data(), inv.data(), gamma.data(), beta.data(), y, f);
      });
      forward([&](const float* in, const float*, float* y, MemoryFormat f) {
        cpu::batchnorm_relu_normalize(in, k.n, k.c, k.spatial, mean.data(), inv.data(), gamma.data(), beta.data(), y,
                                      f);
      });
      forward([&](const float* in, const float* s, float* y, MemoryFormat f) {
        cpu::batchnorm_add_relu_normalize(in, s, k.n, k.c, k.spatial, mean.data(), inv.data(), gamma.data(),
                                          beta.data(), y, f);
      });
      forward([&](const float* in, const float*, float* y, MemoryFormat f) {
        cpu::batchnorm_forward_eval(in, k.n, k.c, k.spatial, mean.data(), var.data(), 1e-3f, gamma.data(), beta.data(),
                                    y, f);
      });

      // The backwards: dx written and added, or not wanted; the fused ones
      // read the ReLU's output (of the add-relu forward, which has zeros).
      std::vector<float> y(size);
      cpu::batchnorm_add_relu_normalize(x.data(), shortcut.data(), k.n, k.c, k.spatial, mean.data(), inv.data(),
                                        gamma.data(), beta.data(), y.data());
      const auto yr = im.to_nhwc(y);
      for (int dx_mode = 0; dx_mode < 3; ++dx_mode) {
        INFO("input gradient " << (dx_mode == 0 ? "not wanted" : dx_mode == 1 ? "written" : "added"));
        const bool accumulate = dx_mode == 2;
        const auto backward = [&](auto run) {
          std::vector<float> dg(c), db(c), dg_r(c), db_r(c), dx = start, dxr = im.to_nhwc(start);
          run(x.data(), y.data(), dy.data(), dg.data(), db.data(), dx_mode ? dx.data() : nullptr, nchw);
          run(xr.data(), yr.data(), dyr.data(), dg_r.data(), db_r.data(), dx_mode ? dxr.data() : nullptr, nhwc);
          CHECK(dg_r == dg);
          CHECK(db_r == db);
          CHECK(im.to_nchw(dxr) == dx);
        };
        backward([&](const float* in, const float*, const float* g, float* dg, float* db, float* dx, MemoryFormat f) {
          cpu::batchnorm_backward(in, g, k.n, k.c, k.spatial, mean.data(), inv.data(), gamma.data(), dg, db, dx,
                                  accumulate, f);
        });
        backward(
            [&](const float* in, const float* out, const float* g, float* dg, float* db, float* dx, MemoryFormat f) {
              cpu::batchnorm_relu_backward(in, out, g, k.n, k.c, k.spatial, mean.data(), inv.data(), gamma.data(), dg,
                                           db, dx, accumulate, f);
            });
        for (bool add_shortcut : {false, true}) {
          INFO("shortcut gradient " << (add_shortcut ? "added" : "written"));
          std::vector<float> ds = start, dsr = im.to_nhwc(start);
          backward(
              [&](const float* in, const float* out, const float* g, float* dg, float* db, float* dx, MemoryFormat f) {
                float* target = f == nhwc ? dsr.data() : ds.data();
                cpu::batchnorm_add_relu_backward(in, out, g, k.n, k.c, k.spatial, mean.data(), inv.data(), gamma.data(),
                                                 dg, db, dx, accumulate, target, add_shortcut, f);
              });
          CHECK(im.to_nchw(dsr) == ds);
        }
      }

      // Synchronised batch norm's halves.
      std::vector<double> sum_dy(c), sum_dy_xhat(c), sum_dy_r(c), sum_dy_xhat_r(c);
      cpu::batchnorm_gradient_sums(x.data(), dy.data(), k.n, k.c, k.spatial, mean.data(), inv.data(), sum_dy.data(),
                                   sum_dy_xhat.data(), nchw);
      cpu::batchnorm_gradient_sums(xr.data(), dyr.data(), k.n, k.c, k.spatial, mean.data(), inv.data(), sum_dy_r.data(),
                                   sum_dy_xhat_r.data(), nhwc);
      CHECK(sum_dy_r == sum_dy);
      CHECK(sum_dy_xhat_r == sum_dy_xhat);
      const auto mean_dy = normal_floats(c, 7), mean_dy_xhat = normal_floats(c, 8);
      for (bool accumulate : {false, true}) {
        std::vector<float> dx = start, dxr = im.to_nhwc(start);
        cpu::batchnorm_input_gradient(x.data(), dy.data(), k.n, k.c, k.spatial, mean.data(), inv.data(), gamma.data(),
                                      mean_dy.data(), mean_dy_xhat.data(), dx.data(), accumulate, nchw);
        cpu::batchnorm_input_gradient(xr.data(), dyr.data(), k.n, k.c, k.spatial, mean.data(), inv.data(), gamma.data(),
                                      mean_dy.data(), mean_dy_xhat.data(), dxr.data(), accumulate, nhwc);
        CHECK(im.to_nchw(dxr) == dx);
      }
    }
}
