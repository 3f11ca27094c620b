// relu on the GPU: the kernels against the CPU loops on odd sizes and
// offsets, in place, written and accumulated; the layer against the CPU
// reference (layer_compare.h).
#include <catch2/catch.hpp>

#include "runtime/cuda/cuda_context.h"
#include "ops/elementwise.h"
#include "gpu_compare.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cuda/elementwise_cuda.h"
#include "layer_compare.h"
#include "layers/relu.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;
using lockstep::testing::require_close;
using lockstep::testing::layer_compare::compare_layer;

namespace {
// A device copy of `values` that starts `offset` floats into its storage, so
// offset 1 gives pointers that are not 16-byte aligned (the scalar kernels).
Tensor on_gpu(const std::vector<float>& values, int64_t offset) {
  int64_t n = static_cast<int64_t>(values.size());
  Tensor storage = Tensor::zeros(Shape{n + offset}, Device::cuda(0));
  Tensor view = storage.view(offset, Shape{n});
  view.copy_from(Tensor::from_vector(Shape{n}, values));
  return view;
}
}  // namespace

TEST_CASE("gpu relu forward equals the cpu loop on odd sizes and offsets", "[gpu][relu]") {
  Context ctx(Device::cuda(0));
  for (int64_t n : {1, 3, 5, 17, 1001, (1 << 20) + 3}) {
    for (int64_t offset : {0, 1}) {
      INFO("n " << n << ", offset " << offset);
      std::vector<float> x = random_values(n, 11 + n);
      std::vector<float> expected(n);
      cpu::relu_forward(x.data(), expected.data(), n);
      Tensor gx = on_gpu(x, offset);
      Tensor gy = on_gpu(std::vector<float>(n, 7.0f), offset);
      ops::relu_forward(ctx, gx, gy);
      ctx.synchronize();
      require_close(gy.to_vector(), expected);
    }
  }
}

TEST_CASE("gpu relu forward runs in place", "[gpu][relu]") {
  Context ctx(Device::cuda(0));
  std::vector<float> x = random_values(1003, 5);
  std::vector<float> expected(x.size());
  cpu::relu_forward(x.data(), expected.data(), static_cast<int64_t>(x.size()));
  Tensor g = on_gpu(x, 0);
  ops::relu_forward(ctx, g, g);
  ctx.synchronize();
  require_close(g.to_vector(), expected);
}

TEST_CASE("gpu relu backward writes and accumulates like the cpu loop", "[gpu][relu]") {
  Context ctx(Device::cuda(0));
  for (int64_t n : {1, 3, 7, 4099, (1 << 18) + 1}) {
    for (int64_t offset : {0, 1}) {
      for (bool accumulate : {false, true}) {
        INFO("n " << n << ", offset " << offset << ", accumulate " << accumulate);
        std::vector<float> x = random_values(n, 3 * n + 1);
        std::vector<float> y(n);
        cpu::relu_forward(x.data(), y.data(), n);
        std::vector<float> dy = random_values(n, 5 * n + 2);
        std::vector<float> dx = random_values(n, 7 * n + 3);
        std::vector<float> expected = dx;
        cpu::relu_backward(y.data(), dy.data(), expected.data(), n, accumulate);
        Tensor gy = on_gpu(y, offset), gdy = on_gpu(dy, offset), gdx = on_gpu(dx, offset);
        ops::relu_backward(ctx, gy, gdy, gdx, accumulate);
        ctx.synchronize();
        require_close(gdx.to_vector(), expected);
      }
    }
  }
}

TEST_CASE("gpu relu refuses tensors of another device", "[gpu][relu]") {
  Context ctx(Device::cuda(0));
  Tensor host = Tensor::zeros(Shape{4});
  Tensor device = Tensor::zeros(Shape{4}, Device::cuda(0));
  REQUIRE_THROWS_WITH(ops::relu_forward(ctx, host, device), Catch::Contains("relu") && Catch::Contains("cpu"));
}

TEST_CASE("gpu relu backward in write mode fills a fresh gradient without reading it", "[gpu][relu]") {
  // Under compute-sanitizer initcheck (scripts/gpu-check) a read of the
  // uninitialised gradient would be reported.
  Context ctx(Device::cuda(0));
  for (int64_t n : {5, 1027}) {
    std::vector<float> y = random_values(n, 41), dy = random_values(n, 43);
    for (float& v : y) v = v > 0.0f ? v : 0.0f;
    std::vector<float> expected(n);
    cpu::relu_backward(y.data(), dy.data(), expected.data(), n, false);
    Tensor gy = Tensor::from_vector(Shape{n}, y, Device::cuda(0));
    Tensor gdy = Tensor::from_vector(Shape{n}, dy, Device::cuda(0));
    Tensor gdx = Tensor::empty(Shape{n + 1}, Device::cuda(0));
    Tensor aligned = gdx.view(0, Shape{n}), shifted = gdx.view(1, Shape{n});
    for (Tensor* dx : {&aligned, &shifted}) {
      ops::relu_backward(ctx, gy, gdy, *dx, false);
      ctx.synchronize();
      require_close(dx->to_vector(), expected);
    }
  }
}

TEST_CASE("gpu relu layer equals the cpu reference", "[gpu][layers][relu][handwritten]") {
  for (int64_t batch : {1, 3}) {
    compare_layer([] { return std::make_unique<ReLU>(); }, {Shape{3, 5, 7}}, batch, 60);
  }
}
