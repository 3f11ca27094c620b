// Pooling on the GPU with bf16 storage: max and average pooling on cuDNN (the
// bound of bf16_library_check.h), global and adaptive average pooling on our
// kernels (bf16_kernel_check.h; adaptive in FP32 as well).
#include <catch2/catch.hpp>

#include <utility>
#include <vector>

#include "bf16_kernel_check.h"
#include "bf16_library_check.h"
#include "ops/pool.h"

using namespace lockstep;
using namespace lockstep::testing::bf16_kernels;
using namespace lockstep::testing::bf16_library;
using lockstep::testing::random_values;

TEST_CASE("gpu bf16: max and average pooling forward and backward on cuDNN", "[gpu][bf16][pool]") {
  const Shape xs{2, 3, 9, 7};
  const PoolWindow window{3, 2, 1};
  check(
      [&](Context& gpu, Context& cpu, Operands& o, Outcome& out) {
        const Shape ys = ops::pool_output_shape("test", xs, window);
        auto [x, x_ref] = o.image(xs, 21);
        auto [dy, dy_ref] = o.image(ys, 22);
        auto [ym, ym_ref] = o.zeros(ys);
        ops::max_pool2d_forward(gpu, x, ym, window);
        ops::max_pool2d_forward(cpu, x_ref, ym_ref, window);
        compare_bf16(gpu, "max y", ym, ym_ref, out);
        auto [dxm, dxm_ref] = o.zeros(xs);
        ops::max_pool2d_backward(gpu, x, ym, dy, dxm, window, false);
        ops::max_pool2d_backward(cpu, x_ref, ym_ref, dy_ref, dxm_ref, window, false);
        compare_bf16(gpu, "max dx", dxm, dxm_ref, out);

        auto [ya, ya_ref] = o.zeros(ys);
        ops::avg_pool2d_forward(gpu, x, ya, window);
        ops::avg_pool2d_forward(cpu, x_ref, ya_ref, window);
        compare_bf16(gpu, "avg y", ya, ya_ref, out);
        auto [dxa, dxa_ref] = o.image(xs, 23);  // accumulated onto
        ops::avg_pool2d_backward(gpu, x, ya, dy, dxa, window, true);
        ops::avg_pool2d_backward(cpu, x_ref, ya_ref, dy_ref, dxa_ref, window, true);
        compare_bf16(gpu, "avg dx (accumulated)", dxa, dxa_ref, out);
      },
      // Not "max y": rounding is monotonic, so the max of the rounded values
      // is the rounded max, and unrounded operands give the same reference.
      {"avg y", "avg dx (accumulated)"});
}

TEST_CASE("bf16 global average pooling on the gpu matches the fp32 cpu op", "[gpu][bf16][pool]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  for (MemoryFormat format : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
    for (bool accumulate : {false, true}) {
      INFO("format " << memory_format_name(format) << ", accumulate " << accumulate);
      const Shape s{5, 37, 7, 7}, p{5, 37, 1, 1};
      const auto x = in_format(s, rounded(random_values(s.numel(), 12)), format);
      const auto dy = rounded(random_values(p.numel(), 13));
      const auto old = in_format(s, rounded(random_values(s.numel(), 14)), format);
      Tensor gx = bf16_on_gpu(s, x, 0, format), gy = bf16_on_gpu(p, std::vector<float>(p.numel()));
      Tensor cx = f32_on_cpu(s, x, format), cy = f32_on_cpu(p, std::vector<float>(p.numel()));
      ops::global_avg_pool_forward(gpu, gx, gy);
      ops::global_avg_pool_forward(cpu, cx, cy);
      Tensor gdx = bf16_on_gpu(s, old, 0, format), cdx = f32_on_cpu(s, old, format);
      ops::global_avg_pool_backward(gpu, bf16_on_gpu(p, dy), gdx, accumulate);
      ops::global_avg_pool_backward(cpu, f32_on_cpu(p, dy), cdx, accumulate);
      gpu.synchronize();
      require_bound(gy.to_vector(), cy.to_vector(), "forward");
      require_bits(gdx.to_vector(), cdx.to_vector(), "backward");
    }
  }
}

TEST_CASE("adaptive average pooling on the gpu equals the cpu op bit for bit, fp32 and bf16, either format",
          "[gpu][bf16][pool]") {
  // Shrinking with overlapping windows (13x11 -> 7x7, VGG's pool of a 416 px
  // input), growing by repetition (1x1 and 3x2 -> 7x7, a 32 px input), the identity.
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  for (const auto& [in, out] : {std::pair<Shape, Shape>{Shape{3, 37, 13, 11}, Shape{3, 37, 7, 7}},
                                {Shape{2, 33, 1, 1}, Shape{2, 33, 7, 7}},
                                {Shape{2, 5, 3, 2}, Shape{2, 5, 7, 7}},
                                {Shape{1, 6, 7, 7}, Shape{1, 6, 7, 7}}}) {
    for (MemoryFormat format : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
      for (bool bf16 : {false, true}) {
        for (bool accumulate : {false, true}) {
          INFO(in.str() << " -> " << out.str() << ", " << memory_format_name(format) << (bf16 ? ", bf16" : ", fp32")
                        << ", accumulate " << accumulate);
          const auto values = [&](const Shape& s, uint64_t seed) {
            const std::vector<float> v = random_values(s.numel(), seed);
            return in_format(s, bf16 ? rounded(v) : v, format);
          };
          const auto on_gpu = [&](const Shape& s, const std::vector<float>& v) {
            return bf16 ? bf16_on_gpu(s, v, 0, format) : Tensor::from_vector(s, v, Device::cuda(0)).with_format(format);
          };
          const auto x = values(in, 21), dy = values(out, 22), old = values(in, 23);
          Tensor gx = on_gpu(in, x), gy = on_gpu(out, std::vector<float>(out.numel()));
          Tensor cx = f32_on_cpu(in, x, format), cy = f32_on_cpu(out, std::vector<float>(out.numel()), format);
          ops::adaptive_avg_pool2d_forward(gpu, gx, gy);
          ops::adaptive_avg_pool2d_forward(cpu, cx, cy);
          Tensor gdx = on_gpu(in, old), cdx = f32_on_cpu(in, old, format);
          ops::adaptive_avg_pool2d_backward(gpu, on_gpu(out, dy), gdx, accumulate);
          ops::adaptive_avg_pool2d_backward(cpu, f32_on_cpu(out, dy, format), cdx, accumulate);
          gpu.synchronize();
          if (bf16) {
            require_bits(gy.to_vector(), cy.to_vector(), "forward");
            require_bits(gdx.to_vector(), cdx.to_vector(), "backward");
          } else {
            REQUIRE(gy.to_vector() == cy.to_vector());
            REQUIRE(gdx.to_vector() == cdx.to_vector());
          }
        }
      }
    }
  }
}
