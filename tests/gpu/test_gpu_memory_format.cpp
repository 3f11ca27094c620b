// Memory formats on the GPU: convert_format against the CPU's, element-wise
// ops on NHWC tensors, ops refusing mixed formats. Each op's NHWC tests are
// in its test_gpu_<op>_nhwc.cpp; bf16 conversion: test_gpu_memory_format_bf16.cpp.
#include <catch2/catch.hpp>

#include "nhwc_check.h"
#include "ops/batchnorm.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/memory_format.h"
#include "ops/pool.h"
#include "ops/tensor_ops.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing::nhwc;
using lockstep::testing::random_tensor;

TEST_CASE("gpu convert_format equals the cpu's, both ways", "[gpu][memory-format]") {
  Context cpu(Device::cpu());
  Context gpu(Device::cuda(0), lockstep::testing::reference_options());
  // Odd extents, several 32 x 32 tiles, batch 1, one channel, one pixel.
  for (const Shape& s : {Shape{3, 37, 9, 7}, Shape{1, 5, 3, 11}, Shape{2, 1, 4, 4}, Shape{4, 70, 1, 1},
                         Shape{2, 33, 65, 1}}) {
    for (MemoryFormat from : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
      const MemoryFormat to = from == MemoryFormat::nchw ? MemoryFormat::nhwc : MemoryFormat::nchw;
      INFO("shape " << s.str() << " from " << memory_format_name(from));
      Tensor x = random_tensor(s, 3).with_format(from);
      Tensor want = ops::to_format(cpu, x, to);
      Tensor got = ops::to_format(gpu, x.to(Device::cuda(0)), to);
      gpu.synchronize();
      REQUIRE(got.format() == to);
      REQUIRE(got.to_vector() == want.to_vector());
    }
  }
}

TEST_CASE("gpu element-wise ops take nhwc tensors when every operand is nhwc", "[gpu][memory-format][relu][add]") {
  check_formats(
      [](Run& r) {
        const Shape s{2, 7, 3, 5};
        Tensor a = r.image(s, 1), b = r.image(s, 2), sum = r.image(s, 3), y = r.image(s, 4), dx = r.image(s, 5);
        ops::add(r.ctx, a, b, sum);
        ops::relu_forward(r.ctx, a, y);
        ops::relu_backward(r.ctx, y, b, dx, true);
        r.keep("sum", sum);
        r.keep("relu", y);
        r.keep("relu dx", dx);
      },
      true);
}

TEST_CASE("gpu ops refuse images of mixed memory formats", "[gpu][memory-format][batchnorm2d][conv2d][pool]") {
  Run r(Device::cuda(0), MemoryFormat::nhwc);
  const Shape s{2, 3, 4, 5};
  Tensor x = r.image(s, 1), y_nchw = r.image(s, 2, MemoryFormat::nchw);
  Tensor c3 = r.zeros(Shape{3}), g = r.plain(Shape{3}, 3), b = r.plain(Shape{3}, 4);
  Tensor m = r.zeros(Shape{3}), v = r.zeros(Shape{3}), sm = r.zeros(Shape{3}), si = r.zeros(Shape{3});
  REQUIRE_THROWS_WITH(ops::batchnorm_forward_train(r.ctx, x, g, b, 1e-5f, y_nchw, m, v, sm, si),
                      Catch::Contains("memory formats nhwc and nchw mixed"));
  Tensor w = r.image(Shape{4, 3, 3, 3}, 5);
  Tensor conv_out = r.image(Shape{2, 4, 4, 5}, 6, MemoryFormat::nchw);
  REQUIRE_THROWS_WITH(ops::conv2d_forward(r.ctx, x, w, nullptr, conv_out, 1, 1),
                      Catch::Contains("conv2d forward: memory formats nhwc and nchw mixed"));
  Tensor pooled = r.image(Shape{2, 3, 2, 2}, 7, MemoryFormat::nchw);
  REQUIRE_THROWS_WITH(ops::max_pool2d_forward(r.ctx, x, pooled, PoolWindow{2, 2, 0}),
                      Catch::Contains("max_pool2d: memory formats nhwc and nchw mixed"));
}
