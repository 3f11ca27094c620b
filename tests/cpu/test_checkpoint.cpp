#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "training/checkpoint.h"
#include "layers/models.h"

using namespace lockstep;
namespace fs = std::filesystem;

namespace {
fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("lockstep-ck-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}
std::vector<char> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_all(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
}  // namespace

TEST_CASE("a checkpoint round-trips parameters, statistics, momentum and metadata", "[checkpoint]") {
  fs::path dir = temp_dir();
  auto a = build_model_from_spec("resnet20 3x8x8 5", Device::cpu(), 1);
  // Something non-trivial in momentum and the running statistics.
  a->arenas().momentum.copy_from(a->arenas().params);
  std::vector<float> state = a->state_arena().to_vector();
  for (size_t i = 0; i < state.size(); ++i) state[i] += 0.25f * static_cast<float>(i % 7);
  a->state_arena().copy_from(Tensor::from_vector(a->state_arena().shape(), state));

  CheckpointInfo info;
  info.model_spec = a->spec();
  info.class_names = {"a", "b", "c", "d", "e"};
  info.epoch = 3;
  info.step = 1234;
  info.batch_in_epoch = 17;
  info.seed = 99;
  info.extra["lr"] = "0.1";
  save_checkpoint((dir / "ck.safetensors").string(), *a, info);
  REQUIRE_FALSE(fs::exists(dir / "ck.safetensors.tmp"));

  auto b = build_model_from_spec("resnet20 3x8x8 5", Device::cpu(), 2);  // other weights
  LoadedCheckpoint ck = read_checkpoint((dir / "ck.safetensors").string());
  REQUIRE(ck.info.model_spec == a->spec());
  REQUIRE(ck.info.class_names == info.class_names);
  REQUIRE(ck.info.epoch == 3);
  REQUIRE(ck.info.step == 1234);
  REQUIRE(ck.info.batch_in_epoch == 17);
  REQUIRE(ck.info.seed == 99);
  REQUIRE(ck.info.extra.at("lr") == "0.1");
  load_into(*b, ck, "ck");
  REQUIRE(b->arenas().params.to_vector() == a->arenas().params.to_vector());
  REQUIRE(b->arenas().momentum.to_vector() == a->arenas().momentum.to_vector());
  REQUIRE(b->state_arena().to_vector() == a->state_arena().to_vector());
  fs::remove_all(dir);
}

TEST_CASE("adamw's state round-trips under its own names, which an sgd model refuses and eval skips",
          "[checkpoint][adamw]") {
  fs::path dir = temp_dir();
  auto a = build_model_from_spec("mlp 1x4x4 3", Device::cpu(), 1);
  a->arenas().add_adamw_state();
  a->arenas().momentum.copy_from(a->arenas().params);
  std::vector<float> second = a->arenas().params.to_vector();
  for (float& v : second) v = v * v + 0.5f;
  a->arenas().exp_avg_sq.copy_from(Tensor::from_vector(a->arenas().params.shape(), second));
  CheckpointInfo info;
  info.model_spec = a->spec();
  const std::string path = (dir / "adamw.safetensors").string();
  save_checkpoint(path, *a, info);
  const LoadedCheckpoint ck = read_checkpoint(path);
  REQUIRE(ck.tensors.count("exp_avg.fc1.weight"));
  REQUIRE(ck.tensors.count("exp_avg_sq.fc1.weight"));
  REQUIRE_FALSE(ck.tensors.count("momentum.fc1.weight"));

  auto b = build_model_from_spec("mlp 1x4x4 3", Device::cpu(), 2);
  b->arenas().add_adamw_state();
  load_into(*b, ck, path);
  REQUIRE(b->arenas().params.to_vector() == a->arenas().params.to_vector());
  REQUIRE(b->arenas().momentum.to_vector() == a->arenas().momentum.to_vector());
  for (const ParamEntry& e : a->arenas().entries())  // the padding between them is not saved
    REQUIRE(b->arenas().exp_avg_sq.view(e.offset, e.shape).to_vector() ==
            a->arenas().exp_avg_sq.view(e.offset, e.shape).to_vector());

  // An SGD model: the names do not fit, and nothing is loaded.
  auto sgd = build_model_from_spec("mlp 1x4x4 3", Device::cpu(), 3);
  const std::vector<float> before = sgd->arenas().params.to_vector();
  REQUIRE_THROWS_WITH(load_into(*sgd, ck, path), Catch::Contains("unexpected tensor exp_avg_sq.fc1.weight") &&
                                                     Catch::Contains("missing tensor momentum.fc1.weight"));
  REQUIRE(sgd->arenas().params.to_vector() == before);
  // Without the optimizer's state (eval, predict): the weights alone.
  load_into(*sgd, ck, path, /*with_optimizer_state=*/false);
  REQUIRE(sgd->arenas().params.to_vector() == a->arenas().params.to_vector());
  fs::remove_all(dir);
}

TEST_CASE("damaged checkpoints are refused with a message that says so", "[checkpoint]") {
  fs::path dir = temp_dir();
  auto model = build_model_from_spec("mlp 1x4x4 3", Device::cpu(), 1);
  CheckpointInfo info;
  info.model_spec = model->spec();
  fs::path good = dir / "good.safetensors";
  save_checkpoint(good.string(), *model, info);
  std::vector<char> bytes = read_all(good);

  SECTION("truncated") {
    bytes.resize(bytes.size() / 2);
    write_all(dir / "bad", bytes);
    REQUIRE_THROWS_WITH(read_checkpoint((dir / "bad").string()), Catch::Contains("bad") && Catch::Contains("truncated"));
  }
  SECTION("a flipped bit in the tensor data") {
    bytes[bytes.size() - 5] ^= 0x10;
    write_all(dir / "bad", bytes);
    REQUIRE_THROWS_WITH(read_checkpoint((dir / "bad").string()), Catch::Contains("checksum"));
  }
  SECTION("cut inside the header") {
    bytes.resize(20);
    write_all(dir / "bad", bytes);
    REQUIRE_THROWS_WITH(read_checkpoint((dir / "bad").string()), Catch::Contains("truncated"));
  }
  SECTION("not a checkpoint at all") {
    write_all(dir / "bad", std::vector<char>(100, 'x'));
    REQUIRE_THROWS(read_checkpoint((dir / "bad").string()));
  }
  SECTION("another model") {
    auto other = build_model_from_spec("mlp 1x4x4 5", Device::cpu(), 1);
    REQUIRE_THROWS_WITH(load_into(*other, read_checkpoint(good.string()), "good"),
                        Catch::Contains("does not fit") && Catch::Contains("fc3.weight"));
  }
  fs::remove_all(dir);
}

TEST_CASE("a checkpoint whose class names do not match its classes is refused", "[checkpoint]") {
  fs::path dir = temp_dir();
  auto model = build_model_from_spec("mlp 1x4x4 3", Device::cpu(), 1);
  CheckpointInfo info;
  info.model_spec = model->spec();
  info.class_names = {"a", "b"};  // as an edited checkpoint's metadata might say
  save_checkpoint((dir / "names.safetensors").string(), *model, info);
  LoadedCheckpoint ck = read_checkpoint((dir / "names.safetensors").string());
  REQUIRE_THROWS_WITH(load_into(*model, ck, "names.safetensors"),
                      Catch::Contains("checkpoint names.safetensors has damaged metadata: 2 class names for its "
                                      "model's 3 classes"));
  fs::remove_all(dir);
}
