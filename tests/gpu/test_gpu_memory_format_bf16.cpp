// The memory-format conversion on the GPU with bf16 storage: bit for bit
// (bf16_kernel_check.h).
#include <catch2/catch.hpp>

#include "bf16_kernel_check.h"
#include "ops/memory_format.h"

using namespace lockstep;
using namespace lockstep::testing::bf16_kernels;
using lockstep::testing::random_values;

TEST_CASE("bf16 memory-format conversion on the gpu moves the bits", "[gpu][bf16][memory-format]") {
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
