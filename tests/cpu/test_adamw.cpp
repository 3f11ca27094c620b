// AdamW's CPU twin against torch.optim.AdamW (PyTorch 1.13) on the same
// weights and gradients: five steps with a changing learning rate, weight
// decay on the weights only, a backbone at half the rate
// (support/adamw_torch.h), fp32 and with the bf16 weight copy.
#include <catch2/catch.hpp>

#include "ops/sgd.h"
#include "support/adamw_torch.h"

using namespace lockstep;

TEST_CASE("adamw equals torch.optim.AdamW step by step on the cpu", "[adamw][torch][ops]") {
  Context ctx(Device::cpu());
  const bool bf16_copy = GENERATE(false, true);
  // The stored run (tests/torch/adamw_oracle.py) is five steps, each compared in full.
  REQUIRE(testing::replay_torch_adamw(ctx, {.bf16_copy = bf16_copy}) == 5);
}

TEST_CASE("adamw refuses arenas without its second moment, betas of 1 and an eps of 0", "[adamw]") {
  Context ctx(Device::cpu());
  ParameterArenas a({{"w", Shape{3}, Init::ones, true}}, Device::cpu(), true);
  SgdConfig config;
  config.optimizer = Optimizer::adamw;
  REQUIRE_THROWS_WITH(ops::optimizer_step(ctx, a, config, 1e-3f, 0), Catch::Contains("second-moment arena"));
  a.add_adamw_state();
  config.beta2 = 1.0f;
  REQUIRE_THROWS_WITH(ops::optimizer_step(ctx, a, config, 1e-3f, 0), Catch::Contains("betas 0.9, 1"));
  config.beta2 = 0.999f;
  config.eps = 0.0f;
  REQUIRE_THROWS_WITH(ops::optimizer_step(ctx, a, config, 1e-3f, 0), Catch::Contains("eps 0"));
}

TEST_CASE("adamw's first step moves each weight by lr in its gradient's sign", "[adamw]") {
  // t = 1: m_hat = g and sqrt(v_hat) = |g|, so the step is lr * g / (|g| + eps), lr in g's sign.
  Context ctx(Device::cpu());
  ParameterArenas a({{"w", Shape{2}, Init::zeros, false}}, Device::cpu(), true);
  a.add_adamw_state();
  a.grad(0).copy_from(Tensor::from_vector(Shape{2}, {3.0f, -0.5f}));
  SgdConfig config;
  config.optimizer = Optimizer::adamw;
  ops::optimizer_step(ctx, a, config, 0.01f, 0);
  const std::vector<float> w = a.param(0).to_vector();
  REQUIRE(w[0] == Approx(-0.01f).epsilon(1e-6));
  REQUIRE(w[1] == Approx(0.01f).epsilon(1e-6));
}
