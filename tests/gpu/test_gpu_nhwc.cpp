// Channels-last (NHWC) tensors on the GPU: the conversion kernel against the
// CPU's, bit for bit (a transpose does no arithmetic).
#include <catch2/catch.hpp>

#include "ops/memory_format.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_tensor;

TEST_CASE("gpu convert_format equals the cpu's, both ways", "[gpu][memory-format]") {
  Context cpu(Device::cpu());
  Context gpu(Device::cuda(0));
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
