// AdamW's CUDA kernel against torch.optim.AdamW (PyTorch 1.13) on the same
// weights and gradients (support/adamw_torch.h): fp32 and with the bf16
// weight copy, with the learning rate and step given by the host (an eager
// step) or read from device memory (a step replayed from a CUDA graph).
#include <catch2/catch.hpp>

#include "runtime/cuda/cuda_context.h"
#include "support/adamw_torch.h"

using namespace lockstep;

TEST_CASE("gpu adamw equals torch.optim.AdamW step by step", "[gpu][adamw]") {
  Context ctx(Device::cuda(0));
  const bool bf16_copy = GENERATE(false, true);
  const bool rates_on_device = GENERATE(false, true);
  // The stored run (tests/torch/adamw_oracle.py) is five steps, each compared in full.
  REQUIRE(testing::replay_torch_adamw(ctx, {.bf16_copy = bf16_copy, .rates_on_device = rates_on_device}) == 5);
}
