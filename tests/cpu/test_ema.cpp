// --ema's moving average of the weights against timm's rule (ModelEmaV3 with
// its warm-up, written out in tests/torch/ema_oracle.py): the CPU twin of the
// fused optimizer pass over six stored steps of SGD and AdamW (the first a
// copy, two of warm-up, three at the capped decay), fp32 and with the bf16
// weight copy (the average stays the fp32 weights'), and the running
// statistics' average on stored values (support/ema_torch.h); the
// checkpoint's ema.* tensors; the refusals.
#include <catch2/catch.hpp>

#include <filesystem>

#include "layers/models.h"
#include "ops/sgd.h"
#include "support/ema_torch.h"
#include "training/checkpoint.h"

using namespace lockstep;
namespace fs = std::filesystem;

TEST_CASE("the moving average equals timm's step by step on the cpu", "[ema][torch][ops]") {
  Context ctx(Device::cpu());
  const Optimizer optimizer = GENERATE(Optimizer::sgd, Optimizer::adamw);
  const bool bf16_copy = GENERATE(false, true);
  // The stored run is six steps, each compared in full.
  REQUIRE(testing::replay_torch_ema(ctx, {.optimizer = optimizer, .bf16_copy = bf16_copy}) == 6);
}

TEST_CASE("the running statistics' moving average equals timm's on the cpu", "[ema][torch][ops]") {
  Context ctx(Device::cpu());
  REQUIRE(testing::replay_torch_ema_statistics(ctx, false) == 6);
}

TEST_CASE("the moving average refuses a decay outside (0, 1) and arenas without one", "[ema]") {
  Context ctx(Device::cpu());
  ParameterArenas a({{"w", Shape{3}, Init::ones, true}}, Device::cpu(), true);
  SgdConfig config;
  config.ema_decay = 0.999;
  REQUIRE_THROWS_WITH(ops::optimizer_step(ctx, a, config, 0.1f, 0), Catch::Contains("ParameterArenas::add_ema"));
  a.add_ema(Tensor());
  config.ema_decay = 1.0;
  REQUIRE_THROWS_WITH(ops::optimizer_step(ctx, a, config, 0.1f, 0), Catch::Contains("does not lie in (0, 1)"));
  Tensor average = Tensor::zeros(Shape{2}), value = Tensor::zeros(Shape{3});
  REQUIRE_THROWS_WITH(ops::ema_average(ctx, average, value, 0.9, 0), Catch::Contains("an average of 2 values"));
}

TEST_CASE("a checkpoint keeps the moving average as ema.* tensors, which eval reads in the weights' place",
          "[checkpoint][ema]") {
  const fs::path dir = fs::temp_directory_path() / ("lockstep-ema-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto a = build_model_from_spec("small-cnn 1x12x12 3", Device::cpu(), 1);
  a->arenas().add_ema(a->state_arena());
  // An average unlike the weights and statistics.
  std::vector<float> average = a->arenas().params.to_vector(), stats = a->state_arena().to_vector();
  for (float& v : average) v = 0.5f * v + 0.125f;
  for (float& v : stats) v = v + 3.0f;
  a->arenas().ema.copy_from(Tensor::from_vector(a->arenas().params.shape(), average));
  a->arenas().ema_state.copy_from(Tensor::from_vector(a->state_arena().shape(), stats));
  CheckpointInfo info;
  info.model_spec = a->spec();
  const std::string path = (dir / "ema.safetensors").string();
  save_checkpoint(path, *a, info);
  const LoadedCheckpoint ck = read_checkpoint(path);
  REQUIRE(has_ema(ck));
  const std::string bn = a->state_entries()[0].name;
  REQUIRE(ck.tensors.count("ema." + a->arenas().entries()[0].name));
  REQUIRE(ck.tensors.count("ema." + bn));

  // Resumed: the average comes back exactly.
  auto b = build_model_from_spec("small-cnn 1x12x12 3", Device::cpu(), 2);
  b->arenas().add_ema(b->state_arena());
  load_into(*b, ck, path);
  REQUIRE(b->arenas().params.to_vector() == a->arenas().params.to_vector());
  for (const ParamEntry& e : a->arenas().entries())  // the padding between them is not saved
    REQUIRE(b->arenas().ema.view(e.offset, e.shape).to_vector() == a->arenas().ema.view(e.offset, e.shape).to_vector());
  for (const ParamEntry& e : a->state_entries())
    REQUIRE(b->arenas().ema_state.view(e.offset, e.shape).to_vector() ==
            a->arenas().ema_state.view(e.offset, e.shape).to_vector());

  // Eval: the average in the weights' and statistics' place.
  auto c = build_model_from_spec("small-cnn 1x12x12 3", Device::cpu(), 3);
  load_into(*c, with_ema_weights(ck, path), path, /*with_optimizer_state=*/false);
  for (const ParamEntry& e : a->arenas().entries())
    REQUIRE(c->arenas().params.view(e.offset, e.shape).to_vector() ==
            a->arenas().ema.view(e.offset, e.shape).to_vector());
  for (const ParamEntry& e : a->state_entries())
    REQUIRE(c->state_arena().view(e.offset, e.shape).to_vector() ==
            a->arenas().ema_state.view(e.offset, e.shape).to_vector());
  // --no-ema: the weights; a model without an average refuses the ema.* tensors when resuming.
  load_into(*c, without_ema(ck), path, /*with_optimizer_state=*/false);
  REQUIRE(c->arenas().params.to_vector() == a->arenas().params.to_vector());
  auto plain = build_model_from_spec("small-cnn 1x12x12 3", Device::cpu(), 4);
  REQUIRE_THROWS_WITH(load_into(*plain, ck, path), Catch::Contains("unexpected tensor ema."));

  // A checkpoint without an average leaves the model's untouched (Trainer::resume starts it again).
  auto d = build_model_from_spec("small-cnn 1x12x12 3", Device::cpu(), 5);
  d->arenas().add_ema(d->state_arena());
  const std::vector<float> kept = d->arenas().ema.to_vector();
  load_into(*d, without_ema(ck), path);
  REQUIRE(d->arenas().params.to_vector() == a->arenas().params.to_vector());
  REQUIRE(d->arenas().ema.to_vector() == kept);
  fs::remove_all(dir);
}
