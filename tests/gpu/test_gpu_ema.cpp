// --ema's moving average in the CUDA kernel of the fused optimizer pass
// against timm's rule (support/ema_torch.h, tests/torch/ema_oracle.py): SGD
// and AdamW, fp32 and with the bf16 weight copy, the step given by the host
// (an eager step) or read from device memory (a step replayed from a CUDA
// graph); and the running statistics' average kernel.
#include <catch2/catch.hpp>

#include "runtime/cuda/cuda_context.h"
#include "support/ema_torch.h"

using namespace lockstep;

TEST_CASE("gpu moving average equals timm's step by step", "[gpu][ema]") {
  Context ctx(Device::cuda(0));
  const Optimizer optimizer = GENERATE(Optimizer::sgd, Optimizer::adamw);
  const bool bf16_copy = GENERATE(false, true);
  const bool step_on_device = GENERATE(false, true);
  REQUIRE(testing::replay_torch_ema(
              ctx, {.optimizer = optimizer, .bf16_copy = bf16_copy, .step_on_device = step_on_device}) == 6);
}

TEST_CASE("gpu running statistics' moving average equals timm's", "[gpu][ema]") {
  Context ctx(Device::cuda(0));
  const bool step_on_device = GENERATE(false, true);
  REQUIRE(testing::replay_torch_ema_statistics(ctx, step_on_device) == 6);
}
