// The precision policy (runtime/precision_policy.h): what each precision
// means on the CPU and on a GPU, the one place layers and ops learn it.
#include <catch2/catch.hpp>

#include "runtime/context.h"
#include "runtime/precision_policy.h"

using namespace lockstep;

TEST_CASE("the precision policy: tf32 math on gpus only, bf16 stored on gpus and rounded in f32 on the cpu",
          "[precision]") {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16})
    for (Device device : {Device::cpu(), Device::cuda(0)}) {
      INFO(precision_name(p) << " on " << device.str());
      const PrecisionPolicy policy = precision_policy(p, device);
      const bool gpu = device.is_cuda(), bf16 = p == Precision::bf16;
      CHECK(policy.precision == p);
      CHECK(policy.tf32_math == (gpu && p == Precision::tf32));
      CHECK(policy.bf16 == bf16);
      CHECK(policy.activations == (bf16 && gpu ? DType::bf16 : DType::f32));
      CHECK(policy.bf16_operands == (bf16 && gpu));
      CHECK(policy.rounds_in_f32 == (bf16 && !gpu));
      // Exactly one way of meeting bf16 per device: stored or rounded.
      CHECK(policy.bf16 == (policy.bf16_operands != policy.rounds_in_f32));
    }
  // A Context holds its device's policy.
  ContextOptions options;
  options.precision = Precision::bf16;
  const Context ctx(Device::cpu(), options);
  CHECK(ctx.precision_policy().rounds_in_f32);
  CHECK_FALSE(ctx.precision_policy().bf16_operands);
}
