// What a run writes: checkpoints and metrics never
// overwrite an input or a file of another kind, two writers of one
// checkpoint never share a temporary file and a second run is refused by the
// lock, class names and paths of any bytes survive the checkpoint, and the
// checkpoint of an epoch is written before its evaluation.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <unistd.h>

#include "base/error.h"
#include "data/loader.h"
#include "layers/models.h"
#include "training/checkpoint.h"
#include "training/output_lock.h"
#include "training/output_files.h"
#include "training/safetensors.h"
#include "training/trainer.h"

using namespace lockstep;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("lockstep-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void save_small_checkpoint(const std::string& path, const CheckpointInfo& extra_info = {}) {
  auto model = build_model_from_spec("mlp 1x4x4 3", Device::cpu(), 1);
  CheckpointInfo info = extra_info;
  info.model_spec = model->spec();
  if (info.class_names.empty()) info.class_names = {"a", "b", "c"};
  save_checkpoint(path, *model, info);
}

OutputFile checkpoint_output(const std::string& path) {
  return {path, "--checkpoint", "a lockstep checkpoint", is_checkpoint_file};
}

}  // namespace

TEST_CASE("an output never overwrites an input or a file of another kind", "[checkpoint][reliability]") {
  TempDir dir("outputs");
  fs::create_directories(dir.path / "data" / "cats");
  write_text(dir / "data/cats/1.png", "an image");
  write_text(dir / "notes.txt", "precious");
  fs::create_symlink(dir.path / "data", dir.path / "link-to-data");
  const std::vector<InputPath> inputs = {{dir / "data", "--data"}};

  SECTION("a file of the data set, directly or through a link, even with --force") {
    for (const std::string& path : {dir / "data/cats/1.png", dir / "link-to-data/cats/1.png", dir / "data/new.ck"})
      for (bool force : {false, true})
        REQUIRE_THROWS_WITH(check_output_file(checkpoint_output(path), inputs, force),
                            Contains("--checkpoint " + path) && Contains("--data " + dir / "data"));
    REQUIRE(read_text(dir / "data/cats/1.png") == "an image");
  }
  SECTION("an existing file that is not a checkpoint: refused, unless --force") {
    REQUIRE_THROWS_WITH(check_output_file(checkpoint_output(dir / "notes.txt"), inputs, false),
                        Contains("--checkpoint " + dir / "notes.txt") && Contains("not a lockstep checkpoint") &&
                            Contains("--force"));
    check_output_file(checkpoint_output(dir / "notes.txt"), inputs, true);
  }
  SECTION("a lockstep checkpoint, an empty file and a new file are fine") {
    save_small_checkpoint(dir / "old.ck");
    write_text(dir / "empty", "");
    for (const char* name : {"old.ck", "empty", "new.ck"})
      check_output_file(checkpoint_output(dir / name), inputs, false);
  }
  SECTION("a folder, a missing folder, a folder that cannot hold files") {
    REQUIRE_THROWS_WITH(check_output_file(checkpoint_output(dir / "data"), {}, true), Contains("is a folder"));
    REQUIRE_THROWS_WITH(check_output_file(checkpoint_output(dir / "no/such/ck"), {}, true),
                        Contains("does not exist"));
    // /proc takes no new files, whoever asks (root included).
    REQUIRE_THROWS_WITH(check_output_file(checkpoint_output("/proc/lockstep.ck"), {}, true),
                        Contains("--checkpoint /proc/lockstep.ck") && Contains("cannot create files"));
  }
  SECTION("two outputs naming one file") {
    fs::create_symlink(dir.path / "a.ck", dir.path / "b.ck");
    REQUIRE_THROWS_WITH(check_distinct_outputs({checkpoint_output(dir / "a.ck"),
                                                {dir / "b.ck", "--metrics", "a metrics file", nullptr}}),
                        Contains("name the same file"));
  }
  // Nothing was left behind by the probes.
  for (const std::string& name : files_in(dir.path)) REQUIRE(name.find(".probe-") == std::string::npos);
}

TEST_CASE("two writers of one checkpoint path never share a temporary file", "[checkpoint][reliability]") {
  TempDir dir("writers");
  const std::string path = dir / "ck.safetensors";
  std::atomic<int> failures{0};
  std::atomic<bool> writing{true};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w)
    writers.emplace_back([&, w] {
      SafetensorsFile file;
      file.metadata["writer"] = std::to_string(w);
      file.tensors.push_back({"t", {Shape{4096}, std::vector<float>(4096, static_cast<float>(w))}});
      for (int i = 0; i < 40; ++i) {
        try {
          write_safetensors(path, file);
        } catch (const Error&) {
          ++failures;
        }
      }
    });
  // A reader meanwhile sees one writer's whole file or another's, never a torn one.
  int torn = 0;
  std::thread reader([&] {
    while (writing.load()) {
      if (!fs::exists(path)) continue;
      try {
        SafetensorsFile read = read_safetensors(path);
        const float w = std::stof(read.metadata.at("writer"));
        for (float v : read.at("t").values) torn += v != w;
      } catch (const Error&) {
        ++torn;
      }
    }
  });
  for (auto& t : writers) t.join();
  writing.store(false);
  reader.join();
  REQUIRE(failures.load() == 0);
  REQUIRE(torn == 0);
  REQUIRE(files_in(dir.path) == std::vector<std::string>{"ck.safetensors"});
}

TEST_CASE("the checkpoint lock refuses a second writer, naming the first's process", "[checkpoint][reliability]") {
  TempDir dir("lock");
  const std::string path = dir / "ck.safetensors";
  write_text(dir / "ck.safetensors.tmp-999999-0", "left by a run killed mid-write");
  {
    OutputLock first(path, "--checkpoint");
    REQUIRE(read_text(first.lock_path()) == "lockstep pid " + std::to_string(::getpid()) + "\n");
    REQUIRE_FALSE(fs::exists(dir / "ck.safetensors.tmp-999999-0"));
    // flock locks belong to an open file: a second open conflicts even in one process.
    REQUIRE_THROWS_WITH(OutputLock(path, "--checkpoint"), Contains("checkpoint " + path) &&
                                                  Contains("another lockstep run (process " +
                                                           std::to_string(::getpid()) + ","));
  }
  REQUIRE_FALSE(fs::exists(dir / "ck.safetensors.lock"));
  { OutputLock again(path, "--checkpoint"); }  // released with the first

  write_text(dir / "ck.safetensors.lock", "someone else's file");
  REQUIRE_THROWS_WITH(OutputLock(path, "--checkpoint"), Contains("not a lockstep lock file"));
  REQUIRE(read_text(dir / "ck.safetensors.lock") == "someone else's file");
  write_text(dir / "ck.safetensors.lock", "lockstep pid 12345\n");  // left by a killed run: taken over
  { OutputLock taken(path, "--checkpoint"); }
}

TEST_CASE("class names and settings of any bytes survive a checkpoint", "[checkpoint][reliability]") {
  TempDir dir("bytes");
  const std::string path = dir / "ck.safetensors";
  CheckpointInfo info;
  info.class_names = {"caf\xe9", std::string("nul\0byte", 8), "\xff\xfe"};  // Latin-1, a NUL, stray bytes
  info.extra["data"] = "/photos/\xe9t\xe9";
  info.extra["lr"] = "0.1";
  save_small_checkpoint(path, info);
  const LoadedCheckpoint ck = read_checkpoint(path);
  REQUIRE(ck.info.class_names == info.class_names);
  REQUIRE(ck.info.extra.at("data") == info.extra.at("data"));
  REQUIRE(ck.info.extra.at("lr") == "0.1");
  // Readable for other tools: every metadata value is UTF-8 text.
  for (auto& [key, value] : read_safetensors(path, false).metadata) REQUIRE(valid_utf8(value));

  SafetensorsFile bad;
  bad.metadata["name"] = "\xe9";
  REQUIRE_THROWS_WITH(write_safetensors(dir / "bad.safetensors", bad), Contains("metadata 'name' is not UTF-8"));
}

TEST_CASE("valid_utf8 follows RFC 3629", "[checkpoint][reliability]") {
  REQUIRE(valid_utf8(""));
  REQUIRE(valid_utf8("plain"));
  REQUIRE(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  REQUIRE_FALSE(valid_utf8("caf\xe9"));
  REQUIRE_FALSE(valid_utf8("\xc0\xaf"));          // overlong
  REQUIRE_FALSE(valid_utf8("\xed\xa0\x80"));      // a UTF-16 surrogate
  REQUIRE_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  REQUIRE_FALSE(valid_utf8("\xe2\x82"));          // cut short
}

namespace {

// A test set whose every batch fails, as a bad image in it would.
class FailingSource final : public BatchSource {
public:
  explicit FailingSource(BatchSource& shape_of) : like_(shape_of) {}
  Shape sample_shape() const override { return like_.sample_shape(); }
  int64_t num_classes() const override { return like_.num_classes(); }
  int64_t size() const override { return 1; }
  int64_t batches_per_epoch() const override { return 1; }
  void start_epoch(int64_t, int64_t) override {}
  bool next(HostBatch&) override { LS_FAIL("cannot decode image test/bad.png"); }
  void stop() override {}

private:
  BatchSource& like_;
};

}  // namespace

TEST_CASE("an evaluation that fails never costs the epoch: the checkpoint comes first", "[trainer][reliability]") {
  TempDir dir("evalfail");
  const std::string path = dir / "ck.safetensors";
  std::vector<uint8_t> pixels(32 * 16);
  std::vector<int32_t> labels(32);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 3);
  auto set = std::make_shared<data::InMemoryDataset>(Shape{1, 4, 4}, pixels, labels,
                                                     std::vector<std::string>{"a", "b", "c"}, "synthetic");
  data::LoaderConfig lc;
  lc.batch_size = 8;
  lc.threads = 1;
  data::Loader loader(set, lc);
  FailingSource test(loader);
  const std::string spec = model_spec("mlp", loader.sample_shape(), 3, {.dropout = false});
  ReplicaManager replicas([&](Device d) -> std::unique_ptr<Model> { return build_model_from_spec(spec, d, 5); },
                          {Device::cpu()});
  TrainerConfig config;
  config.epochs = 2;
  config.schedule.base_lr = 0.01f;
  config.checkpoint_path = path;
  Trainer trainer(replicas, loader, &test, config);
  REQUIRE_THROWS_WITH(trainer.run(), Contains("test/bad.png"));
  REQUIRE(read_checkpoint_info(path).epoch == 1);
  REQUIRE(read_checkpoint_info(path).step == 4);
}
