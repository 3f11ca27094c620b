// Batch norm on the GPU with bf16 storage, plain and fused: the bound of
// bf16_kernel_check.h, and that the bound rejects careless roundings.
#include <catch2/catch.hpp>

#include <vector>

#include "bf16_kernel_check.h"
#include "gpu_compare.h"
#include "kernels/bf16_math.h"
#include "ops/batchnorm.h"

using namespace lockstep;
using namespace lockstep::testing::bf16_kernels;
using lockstep::testing::random_values;
using lockstep::testing::require_close;
using lockstep::testing::require_close_scaled;

TEST_CASE("bf16 batch norm on the gpu matches the fp32 cpu op within one bf16 step, rarely", "[gpu][bf16][batchnorm2d]") {
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

TEST_CASE("bf16 batch-norm inference on the gpu equals the fp32 cpu op bit for bit", "[gpu][bf16][batchnorm2d]") {
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

TEST_CASE("the bf16 bound rejects truncation and bf16 intermediates", "[gpu][bf16][batchnorm2d]") {
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
