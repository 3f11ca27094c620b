// The hand-written kernels with bf16 storage: each GPU op on bf16
// tensors against the CPU's FP32 op run on the same bf16-rounded inputs, its
// outputs then rounded to bf16 (what one rounding at the store gives).
//
// Element-wise ops (relu, add, copy/accumulate, dropout, the memory-format
// conversion, batch-norm inference, the pool's backward) compute the same
// float expression from the same floats on both sides: bit for bit.
//
// Reductions (batch-norm training forward and backward, the pool's forward,
// the loss gradient) sum in another order than the CPU (the GPU's one-pass
// shifted moments, block trees), so their FP32 results differ from the CPU's
// in the last bits, relative ~1e-6 at most. Rounding to bf16 (a step of 2^-8
// relative) then gives the same bf16 value except when the exact result lies
// within ~1e-6 relative of a rounding boundary: a fraction of about
// 1e-6 / 2^-8 = 3e-4 of the values, each then one bf16 step off. The bound
// checked: every value within one bf16 step, and at most 1 in 500 values off
// at all. A kernel that truncated instead of rounding to nearest, or rounded
// an intermediate (x - mean, xhat) to bf16 before the last multiply, is off
// on about half the values: "the bound rejects ..." below shows it does.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "gpu_compare.h"
#include "kernels/bf16_math.h"
#include "ops/batchnorm.h"
#include "ops/bf16.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/memory_format.h"
#include "ops/pool.h"
#include "ops/tensor_ops.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;
using lockstep::testing::require_close;
using lockstep::testing::require_close_scaled;

namespace {

constexpr double kMaxOffFraction = 1.0 / 500.0;

std::vector<float> rounded(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = round_to_bf16(v[i]);
  return out;
}

// The value of a bf16 rounded toward zero (truncated): what a careless store would keep.
std::vector<float> truncated(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    bits &= 0xffff0000u;
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

// Position of a bf16 value on the number line in steps (the sign-magnitude
// bits made monotonic), so a difference counts bf16 steps.
int64_t bf16_rank(float x) {
  const int32_t b = static_cast<int32_t>(float_to_bf16(x));
  return (b & 0x8000) ? -static_cast<int64_t>(b & 0x7fff) : static_cast<int64_t>(b);
}

struct Agreement {
  int64_t off = 0;       // values not equal
  int64_t worst = 0;     // the largest distance, in bf16 steps
  int64_t first_off = -1;
};

Agreement agreement(const std::vector<float>& gpu, const std::vector<float>& expected) {
  Agreement a;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const int64_t d = std::llabs(bf16_rank(gpu[i]) - bf16_rank(expected[i]));
    if (d != 0 && a.first_off < 0) a.first_off = static_cast<int64_t>(i);
    a.off += d != 0;
    a.worst = std::max(a.worst, d);
  }
  return a;
}

bool within_bound(const Agreement& a, size_t n) {
  return a.worst <= 1 && static_cast<double>(a.off) <= kMaxOffFraction * static_cast<double>(n);
}

// `gpu` holds bf16 values; `reference` the CPU's FP32 results, rounded here.
void require_bits(const std::vector<float>& gpu, const std::vector<float>& reference, const std::string& what) {
  REQUIRE(gpu.size() == reference.size());
  const Agreement a = agreement(gpu, rounded(reference));
  INFO(what << ": " << a.off << " of " << gpu.size() << " values differ, first at " << a.first_off);
  REQUIRE(a.off == 0);
}

void require_bound(const std::vector<float>& gpu, const std::vector<float>& reference, const std::string& what) {
  REQUIRE(gpu.size() == reference.size());
  const Agreement a = agreement(gpu, rounded(reference));
  INFO(what << ": " << a.off << " of " << gpu.size() << " values differ (at most " << kMaxOffFraction
            << " allowed), worst by " << a.worst << " bf16 steps, first at " << a.first_off);
  REQUIRE(within_bound(a, gpu.size()));
}

// A bf16 tensor on the GPU holding `values` rounded, starting `offset`
// elements into its storage (offsets 1-3: not aligned for the 8-byte
// accesses of four bf16 values), in `format`.
Tensor bf16_on_gpu(const Shape& shape, const std::vector<float>& values, int64_t offset = 0,
                   MemoryFormat format = MemoryFormat::nchw) {
  Tensor storage = Tensor::zeros(Shape{shape.numel() + offset}, Device::cuda(0), DType::bf16);
  Tensor t = storage.view(offset, shape).with_format(format);
  t.copy_from(Tensor::from_vector_bf16(shape, values).with_format(format));
  return t;
}

Tensor f32_on_cpu(const Shape& shape, const std::vector<float>& values, MemoryFormat format = MemoryFormat::nchw) {
  return Tensor::from_vector(shape, values).with_format(format);
}

Tensor f32_on_gpu(const Shape& shape, const std::vector<float>& values) {
  return Tensor::from_vector(shape, values, Device::cuda(0));
}

}  // namespace

TEST_CASE("bf16 relu, add, copy and dropout on the gpu equal the fp32 cpu ops bit for bit", "[gpu][bf16]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  for (int64_t n : {1, 3, 5, 17, 1001, 4099}) {
    for (int64_t offset : {0, 1, 2, 3}) {
      for (bool accumulate : {false, true}) {
        INFO("n " << n << ", offset " << offset << ", accumulate " << accumulate);
        const Shape s{n};
        const auto a = rounded(random_values(n, 7 * n + 1)), b = rounded(random_values(n, 7 * n + 2));
        const auto old = rounded(random_values(n, 7 * n + 3));

        Tensor ga = bf16_on_gpu(s, a, offset), gb = bf16_on_gpu(s, b, offset);
        Tensor ca = f32_on_cpu(s, a), cb = f32_on_cpu(s, b);

        Tensor gy = bf16_on_gpu(s, old, offset), cy = f32_on_cpu(s, old);
        ops::relu_forward(gpu, ga, gy);
        ops::relu_forward(cpu, ca, cy);
        gpu.synchronize();
        require_bits(gy.to_vector(), cy.to_vector(), "relu");

        // relu backward from y = relu(a), dy = b, onto an old gradient.
        Tensor gdx = bf16_on_gpu(s, old, offset), cdx = f32_on_cpu(s, old);
        ops::relu_backward(gpu, gy, gb, gdx, accumulate);
        ops::relu_backward(cpu, cy, cb, cdx, accumulate);
        gpu.synchronize();
        require_bits(gdx.to_vector(), cdx.to_vector(), "relu backward");

        Tensor gsum = bf16_on_gpu(s, old, offset), csum = f32_on_cpu(s, old);
        ops::add(gpu, ga, gb, gsum);
        ops::add(cpu, ca, cb, csum);
        gpu.synchronize();
        require_bits(gsum.to_vector(), csum.to_vector(), "add");

        Tensor gdst = bf16_on_gpu(s, old, offset), cdst = f32_on_cpu(s, old);
        ops::copy_or_add(gpu, ga, gdst, accumulate);
        ops::copy_or_add(cpu, ca, cdst, accumulate);
        gpu.synchronize();
        require_bits(gdst.to_vector(), cdst.to_vector(), "copy_or_add");

        StepInfo step{11, 3, 5};
        Tensor gd = bf16_on_gpu(s, old, offset), cd = f32_on_cpu(s, old);
        ops::dropout_forward(gpu, step, ga, gd, 0.3f, 9);
        ops::dropout_forward(cpu, step, ca, cd, 0.3f, 9);
        Tensor gdd = bf16_on_gpu(s, old, offset), cdd = f32_on_cpu(s, old);
        ops::dropout_backward(gpu, step, gb, gdd, 0.3f, 9, accumulate);
        ops::dropout_backward(cpu, step, cb, cdd, 0.3f, 9, accumulate);
        gpu.synchronize();
        require_bits(gd.to_vector(), cd.to_vector(), "dropout");
        require_bits(gdd.to_vector(), cdd.to_vector(), "dropout backward");
      }
    }
  }
}

TEST_CASE("bf16 memory-format conversion on the gpu moves the bits", "[gpu][bf16]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  const Shape s{3, 5, 7, 9};  // tiles cut in both directions
  const auto x = rounded(random_values(s.numel(), 41));
  Tensor gx = bf16_on_gpu(s, x);
  Tensor g_nhwc = ops::to_format(gpu, gx, MemoryFormat::nhwc);
  REQUIRE(g_nhwc.dtype() == DType::bf16);
  Tensor g_back = ops::to_format(gpu, g_nhwc, MemoryFormat::nchw);
  Tensor c_nhwc = ops::to_format(cpu, f32_on_cpu(s, x), MemoryFormat::nhwc);
  gpu.synchronize();
  require_bits(g_nhwc.to_vector(), c_nhwc.to_vector(), "to nhwc");
  require_bits(g_back.to_vector(), x, "back to nchw");
}

namespace {

// Batch-norm inputs: channel c has mean means[c] and spread spreads[c].
std::vector<float> channel_values(const Shape& s, const std::vector<float>& means, const std::vector<float>& spreads,
                                  uint64_t seed) {
  std::vector<float> v = random_values(s.numel(), seed);
  const int64_t c = s[1], spatial = s[2] * s[3];
  for (int64_t i = 0; i < s.numel(); ++i) {
    const int64_t ch = (i / spatial) % c;
    v[i] = means[ch] + spreads[ch] * v[i];
  }
  return v;
}

// NCHW values of `s` in the element order of `format` (the order to_vector gives).
std::vector<float> in_format(const Shape& s, const std::vector<float>& nchw, MemoryFormat format) {
  if (format == MemoryFormat::nchw) return nchw;
  Context cpu(Device::cpu());
  return ops::to_format(cpu, f32_on_cpu(s, nchw), format).to_vector();
}

struct BnTensors {
  Tensor gamma, beta, batch_mean, batch_var, saved_mean, saved_inv_std;
};
BnTensors bn_tensors(Device device, int64_t c) {
  auto make = [&](uint64_t seed) { return Tensor::from_vector(Shape{c}, random_values(c, seed, 0.5f, 1.5f), device); };
  return {make(1), make(2), Tensor::zeros(Shape{c}, device), Tensor::zeros(Shape{c}, device),
          Tensor::zeros(Shape{c}, device), Tensor::zeros(Shape{c}, device)};
}

enum class Fused { none, relu, add_relu };

}  // namespace

TEST_CASE("bf16 batch norm on the gpu matches the fp32 cpu op within one bf16 step, rarely", "[gpu][bf16][batchnorm]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  // Channel 0 has a mean 1000 times its spread: bf16 keeps 8 bits, so its
  // values sit on a few steps of 4 (around 1000), and the variance of those
  // must still come out right (the one-pass moments shifted by a channel value).
  const std::vector<float> means{1000.0f, 0.3f, -2.0f, 0.0f, 5.0f};
  const std::vector<float> spreads{1.0f, 1.0f, 0.5f, 3.0f, 0.01f};
  for (MemoryFormat format : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
    for (Fused fused : {Fused::none, Fused::relu, Fused::add_relu}) {
      INFO("format " << memory_format_name(format) << ", fused " << static_cast<int>(fused));
      const Shape s{6, 5, 7, 9};
      const int64_t c = 5;
      const auto x = in_format(s, rounded(channel_values(s, means, spreads, 3)), format);
      const auto sc = in_format(s, rounded(random_values(s.numel(), 4)), format);
      const auto dy = in_format(s, rounded(random_values(s.numel(), 5)), format);

      Tensor gx = bf16_on_gpu(s, x, 0, format), gs = bf16_on_gpu(s, sc, 0, format);
      Tensor gy = bf16_on_gpu(s, std::vector<float>(s.numel()), 0, format);
      Tensor cx = f32_on_cpu(s, x, format), cs = f32_on_cpu(s, sc, format);
      Tensor cy = f32_on_cpu(s, std::vector<float>(s.numel()), format);
      BnTensors g = bn_tensors(Device::cuda(0), c), k = bn_tensors(Device::cpu(), c);
      auto forward = [&](Context& ctx, Tensor& x_, Tensor& s_, Tensor& y_, BnTensors& t) {
        if (fused == Fused::add_relu)
          ops::batchnorm_add_relu_forward_train(ctx, x_, s_, t.gamma, t.beta, 1e-5f, y_, t.batch_mean, t.batch_var,
                                                t.saved_mean, t.saved_inv_std);
        else
          (fused == Fused::relu ? ops::batchnorm_relu_forward_train : ops::batchnorm_forward_train)(
              ctx, x_, t.gamma, t.beta, 1e-5f, y_, t.batch_mean, t.batch_var, t.saved_mean, t.saved_inv_std);
      };
      forward(gpu, gx, gs, gy, g);
      forward(cpu, cx, cs, cy, k);
      gpu.synchronize();
      // FP32 statistics from the same bf16 values: one pass against two.
      require_close(g.saved_mean.to_vector(), k.saved_mean.to_vector(), 1e-6, 0.0);
      require_close(g.batch_var.to_vector(), k.batch_var.to_vector(), 1e-5, 0.0);
      require_close(g.saved_inv_std.to_vector(), k.saved_inv_std.to_vector(), 1e-5, 0.0);
      require_bound(gy.to_vector(), cy.to_vector(), "forward");

      Tensor gdy = bf16_on_gpu(s, dy, 0, format), cdy = f32_on_cpu(s, dy, format);
      for (bool accumulate : {false, true}) {
        INFO("accumulate " << accumulate);
        const auto old = in_format(s, rounded(random_values(s.numel(), 6)), format);
        Tensor gdx = bf16_on_gpu(s, old, 0, format), cdx = f32_on_cpu(s, old, format);
        Tensor gds = bf16_on_gpu(s, old, 0, format), cds = f32_on_cpu(s, old, format);
        Tensor gdg = Tensor::zeros(Shape{c}, Device::cuda(0)), gdb = Tensor::zeros(Shape{c}, Device::cuda(0));
        Tensor cdg = Tensor::zeros(Shape{c}), cdb = Tensor::zeros(Shape{c});
        auto backward = [&](Context& ctx, Tensor& x_, Tensor& y_, Tensor& dy_, BnTensors& t, Tensor& dg, Tensor& db,
                            Tensor& dx_, Tensor& ds_) {
          if (fused == Fused::add_relu)
            ops::batchnorm_add_relu_backward(ctx, x_, y_, dy_, t.gamma, t.saved_mean, t.saved_inv_std, dg, db, &dx_,
                                             accumulate, &ds_, accumulate);
          else if (fused == Fused::relu)
            ops::batchnorm_relu_backward(ctx, x_, y_, dy_, t.gamma, t.saved_mean, t.saved_inv_std, dg, db, &dx_,
                                         accumulate);
          else
            ops::batchnorm_backward(ctx, x_, dy_, t.gamma, t.saved_mean, t.saved_inv_std, dg, db, &dx_, accumulate);
        };
        // Both run from their own forward's y and statistics, as in training.
        backward(gpu, gx, gy, gdy, g, gdg, gdb, gdx, gds);
        backward(cpu, cx, cy, cdy, k, cdg, cdb, cdx, cds);
        gpu.synchronize();
        require_close_scaled(gdg.to_vector(), cdg.to_vector(), 1e-4, "dgamma");
        require_close_scaled(gdb.to_vector(), cdb.to_vector(), 1e-4, "dbeta");
        require_bound(gdx.to_vector(), cdx.to_vector(), "dx");
        // The shortcut's gradient is the masked dy (plus the old one): exact
        // but where the two ReLU masks differ, a y within rounding of 0.
        if (fused == Fused::add_relu) require_bound(gds.to_vector(), cds.to_vector(), "dshortcut");
      }
    }
  }
}

TEST_CASE("bf16 batch-norm inference on the gpu equals the fp32 cpu op bit for bit", "[gpu][bf16][batchnorm]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  for (MemoryFormat format : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
    const Shape s{3, 4, 5, 3};
    const auto x = in_format(s, rounded(channel_values(s, {100.0f, 0.0f, -1.0f, 2.0f}, {1.0f, 2.0f, 0.1f, 1.0f}, 8)),
                             format);
    const auto rm = random_values(4, 9), rv = random_values(4, 10, 0.5f, 2.0f);
    BnTensors g = bn_tensors(Device::cuda(0), 4), k = bn_tensors(Device::cpu(), 4);
    Tensor gx = bf16_on_gpu(s, x, 0, format), gy = bf16_on_gpu(s, std::vector<float>(s.numel()), 0, format);
    Tensor cx = f32_on_cpu(s, x, format), cy = f32_on_cpu(s, std::vector<float>(s.numel()), format);
    ops::batchnorm_forward_eval(gpu, gx, g.gamma, g.beta, f32_on_gpu(Shape{4}, rm), f32_on_gpu(Shape{4}, rv), 1e-5f,
                                gy);
    ops::batchnorm_forward_eval(cpu, cx, k.gamma, k.beta, f32_on_cpu(Shape{4}, rm), f32_on_cpu(Shape{4}, rv), 1e-5f,
                                cy);
    gpu.synchronize();
    require_bits(gy.to_vector(), cy.to_vector(), "eval");
  }
}

TEST_CASE("the bf16 bound rejects truncation and bf16 intermediates", "[gpu][bf16][batchnorm]") {
  // The batch-norm output of the test above, formed on the CPU three ways:
  // rounded once (the contract), truncated, and with xhat rounded to bf16
  // before gamma and beta are applied. Only the first meets the bound.
  Context cpu(Device::cpu());
  const Shape s{6, 5, 7, 9};
  const auto x = rounded(channel_values(s, {1000.0f, 0.3f, -2.0f, 0.0f, 5.0f}, {1.0f, 1.0f, 0.5f, 3.0f, 0.01f}, 3));
  BnTensors k = bn_tensors(Device::cpu(), 5);
  Tensor cx = f32_on_cpu(s, x), cy = f32_on_cpu(s, std::vector<float>(s.numel()));
  ops::batchnorm_forward_train(cpu, cx, k.gamma, k.beta, 1e-5f, cy, k.batch_mean, k.batch_var, k.saved_mean,
                               k.saved_inv_std);
  const auto y = cy.to_vector();
  const auto mean = k.saved_mean.to_vector(), inv = k.saved_inv_std.to_vector();
  const auto gamma = k.gamma.to_vector(), beta = k.beta.to_vector();
  std::vector<float> double_rounded(y.size());
  for (int64_t i = 0; i < s.numel(); ++i) {
    const int64_t c = (i / (7 * 9)) % 5;
    double_rounded[i] = round_to_bf16(gamma[c] * round_to_bf16((x[i] - mean[c]) * inv[c]) + beta[c]);
  }
  CHECK(within_bound(agreement(rounded(y), rounded(y)), y.size()));
  CHECK_FALSE(within_bound(agreement(truncated(y), rounded(y)), y.size()));
  CHECK_FALSE(within_bound(agreement(double_rounded, rounded(y)), y.size()));
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

TEST_CASE("bf16 softmax cross-entropy on the gpu: fp32 loss, bf16 gradient", "[gpu][bf16][loss]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  for (int64_t classes : {3, 10, 100}) {
    INFO("classes " << classes);
    const int64_t rows = 67;
    const Shape s{rows, classes};
    const auto z = rounded(random_values(s.numel(), 20 + classes, -4.0f, 4.0f));
    std::vector<int32_t> labels(rows);
    for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>((r * 7) % classes);
    Tensor gz = bf16_on_gpu(s, z), gg = bf16_on_gpu(s, std::vector<float>(s.numel()));
    Tensor cz = f32_on_cpu(s, z), cg = f32_on_cpu(s, std::vector<float>(s.numel()));
    const StepMetrics gm = ops::softmax_cross_entropy(gpu, gz, Tensor::from_labels(labels, Device::cuda(0)),
                                                      1.0f / rows, &gg);
    const StepMetrics cm = ops::softmax_cross_entropy(cpu, cz, Tensor::from_labels(labels), 1.0f / rows, &cg);
    REQUIRE(gm.correct == cm.correct);
    REQUIRE(std::fabs(gm.loss_sum - cm.loss_sum) <= 1e-5 * std::fabs(cm.loss_sum));
    require_bound(gg.to_vector(), cg.to_vector(), "gradient");
  }
}

TEST_CASE("bf16 ops refuse mixed dtypes, bf16 on the cpu and bf16 batch-norm parameters", "[gpu][bf16]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  const Shape s{2, 3, 2, 2};
  const std::vector<float> v(s.numel(), 1.0f);
  Tensor b = bf16_on_gpu(s, v), f = f32_on_gpu(s, v);
  REQUIRE_THROWS_WITH(ops::relu_forward(gpu, b, f), Catch::Contains("relu") && Catch::Contains("mixed"));
  REQUIRE_THROWS_WITH(ops::add(gpu, b, b, f), Catch::Contains("add") && Catch::Contains("mixed"));
  Tensor cb = Tensor::from_vector_bf16(s, v);
  REQUIRE_THROWS_WITH(ops::relu_forward(cpu, cb, cb), Catch::Contains("relu") && Catch::Contains("bf16 tensors on cpu"));
  BnTensors g = bn_tensors(Device::cuda(0), 3);
  Tensor bf16_gamma = Tensor::from_vector_bf16(Shape{3}, {1.0f, 1.0f, 1.0f}, Device::cuda(0));
  Tensor y = bf16_on_gpu(s, v);
  REQUIRE_THROWS_WITH(ops::batchnorm_forward_train(gpu, b, bf16_gamma, g.beta, 1e-5f, y, g.batch_mean, g.batch_var,
                                                   g.saved_mean, g.saved_inv_std),
                      Catch::Contains("gamma is bf16, expected f32"));
  REQUIRE_THROWS_WITH(ops::batchnorm_forward_train(gpu, b, g.gamma, g.beta, 1e-5f, f, g.batch_mean, g.batch_var,
                                                   g.saved_mean, g.saved_inv_std),
                      Catch::Contains("mixed"));
  Tensor logits = bf16_on_gpu(Shape{2, 3}, std::vector<float>(6)), grad = f32_on_gpu(Shape{2, 3}, std::vector<float>(6));
  REQUIRE_THROWS_WITH(ops::softmax_cross_entropy(gpu, logits, Tensor::from_labels({0, 1}, Device::cuda(0)), 1.0f, &grad),
                      Catch::Contains("softmax_cross_entropy") && Catch::Contains("mixed"));
}

TEST_CASE("f32 to bf16 conversion and rounding on the gpu equal the cpu's, ties to even", "[gpu][bf16]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  // Random values, exact ties (1 + 2^-8 rounds down to even, 1 + 3 * 2^-8 up),
  // the largest finite float (past bf16's largest: infinity), a NaN.
  std::vector<float> v = random_values(1003, 31, -1e3f, 1e3f);
  for (float special : {1.00390625f, 1.01171875f, -1.00390625f, 3.4028235e38f, std::nanf("")}) v.push_back(special);
  const Shape s{static_cast<int64_t>(v.size())};
  Tensor g32 = Tensor::from_vector(s, v, Device::cuda(0)), g16 = Tensor::zeros(s, Device::cuda(0), DType::bf16);
  Tensor c32 = Tensor::from_vector(s, v), c16 = Tensor::zeros(s, Device::cpu(), DType::bf16);
  ops::convert(gpu, g32, g16);
  ops::convert(cpu, c32, c16);
  Tensor gback = Tensor::zeros(s, Device::cuda(0));
  ops::convert(gpu, g16, gback);
  ops::round_to_bf16(gpu, g32);
  ops::round_to_bf16(cpu, c32);
  gpu.synchronize();
  std::vector<uint16_t> gbits(v.size()), cbits(v.size());
  Tensor g16_host = g16.to(Device::cpu());
  std::memcpy(gbits.data(), g16_host.bf16_data(), v.size() * 2);
  std::memcpy(cbits.data(), c16.bf16_data(), v.size() * 2);
  REQUIRE(gbits == cbits);
  const auto widened = gback.to_vector(), rounded_gpu = g32.to_vector(), rounded_cpu = c32.to_vector();
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("value " << i << ": " << v[i]);
    REQUIRE(std::memcmp(&widened[i], &rounded_cpu[i], 4) == 0);
    REQUIRE(std::memcmp(&rounded_gpu[i], &rounded_cpu[i], 4) == 0);
  }
  REQUIRE(rounded_cpu[1003] == 1.0f);
  REQUIRE(rounded_cpu[1004] == 1.015625f);
  REQUIRE(std::isinf(rounded_cpu[1006]));
}
