// bf16 storage on the GPU across ops: conversion and rounding against the
// CPU's, the element-wise ops (relu, add, copy, dropout) bit for bit against
// the FP32 CPU ops (bf16_kernel_check.h), and the refusals of mixed or
// misplaced bf16 tensors. Each op's own bf16 tests are in its
// test_gpu_<op>_bf16.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bf16_kernel_check.h"
#include "ops/batchnorm.h"
#include "ops/bf16.h"
#include "ops/conv.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/loss.h"
#include "ops/pool.h"
#include "ops/tensor_ops.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing::bf16_kernels;
using lockstep::testing::random_values;

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

TEST_CASE("bf16 relu, add, copy and dropout on the gpu equal the fp32 cpu ops bit for bit",
          "[gpu][bf16][relu][add][tensor_ops][dropout]") {
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

TEST_CASE("bf16 ops refuse mixed dtypes, bf16 on the cpu and bf16 batch-norm parameters",
          "[gpu][bf16][relu][add][batchnorm2d][loss]") {
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

TEST_CASE("gpu bf16: the library ops refuse bf16 on the CPU and mixed storage types, naming the op",
          "[gpu][bf16][conv2d][linear][pool]") {
  Context gpu(Device::cuda(0), lockstep::testing::reference_options());
  Context cpu(Device::cpu(), lockstep::testing::reference_options());
  const Shape xs{1, 2, 5, 5}, ws{3, 2, 3, 3}, ys{1, 3, 3, 3};
  Tensor xb = Tensor::zeros(xs, Device::cuda(0), DType::bf16), wb = Tensor::zeros(ws, Device::cuda(0), DType::bf16);
  Tensor yb = Tensor::zeros(ys, Device::cuda(0), DType::bf16), yf = Tensor::zeros(ys, Device::cuda(0));
  Tensor wf = Tensor::zeros(ws, Device::cuda(0));
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(ops::conv2d_forward(gpu, xb, wf, nullptr, yb, 1, 0),
                      Contains("conv2d forward") && Contains("weight is f32"));
  REQUIRE_THROWS_WITH(ops::conv2d_forward(gpu, xb, wb, nullptr, yf, 1, 0), Contains("output is f32"));
  Tensor dwb = Tensor::zeros(ws, Device::cuda(0), DType::bf16);
  REQUIRE_THROWS_WITH(ops::conv2d_backward_filter(gpu, xb, yb, dwb, 1, 0),
                      Contains("conv2d backward filter") && Contains("weight gradient is bf16, expected f32"));
  Tensor bias_i32 = Tensor::from_labels({1, 2, 3}, Device::cuda(0));
  REQUIRE_THROWS_WITH(ops::conv2d_forward(gpu, xb, wb, &bias_i32, yb, 1, 0), Contains("bias is i32"));
  Tensor bias_bf16 = Tensor::zeros(Shape{3}, Device::cuda(0), DType::bf16);
  REQUIRE_THROWS_WITH(ops::conv2d_forward(gpu, Tensor::zeros(xs, Device::cuda(0)), wf, &bias_bf16, yf, 1, 0),
                      Contains("bias is bf16 with f32 operands"));
  Tensor xc = Tensor::zeros(xs, Device::cpu(), DType::bf16), wc = Tensor::zeros(ws, Device::cpu(), DType::bf16);
  Tensor yc = Tensor::zeros(ys, Device::cpu(), DType::bf16);
  REQUIRE_THROWS_WITH(ops::conv2d_forward(cpu, xc, wc, nullptr, yc, 1, 0),
                      Contains("conv2d forward") && Contains("bf16 tensors on cpu"));
  Tensor mc = Tensor::zeros(Shape{2, 4}, Device::cpu(), DType::bf16);
  Tensor lw = Tensor::zeros(Shape{3, 4}, Device::cpu(), DType::bf16), lo = Tensor::zeros(Shape{2, 3}, Device::cpu(), DType::bf16);
  REQUIRE_THROWS_WITH(ops::linear_forward(cpu, mc, lw, nullptr, lo), Contains("linear forward") && Contains("CPU"));
  REQUIRE_THROWS_WITH(ops::max_pool2d_forward(gpu, xb, yf, PoolWindow{3, 1, 0}),
                      Contains("max_pool2d") && Contains("output is f32"));
}
