// Pretrained weights: load_pretrained and export_state_dict on files made
// here (round trip, a new classifier, every refusal), and, hidden as
// [.torch][pretrained], torchvision's own models: tests/torch/
// pretrained_oracle.py writes their state dicts, images and logits into
// LOCKSTEP_TORCH_PRETRAINED (tests/torch.cmake), these load them and compare
// the logits, and write checkpoints that the script then exports with
// `lockstep export` and loads back into torchvision.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <tuple>

#include "base/error.h"
#include "layers/models.h"
#include "support/layer_harness.h"
#include "training/checkpoint.h"
#include "training/pretrained.h"
#include "training/safetensors.h"

using namespace lockstep;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "lockstep-pretrained-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::unique_ptr<Graph> tv_model(const std::string& name, const Shape& input, int64_t classes, uint64_t seed) {
  auto model = build_model(name, input, classes, {.dropout = false});
  model->finalize(Device::cpu(), seed);
  return model;
}

std::vector<std::string> class_names(int64_t n) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < n; ++i) names.push_back("class" + std::to_string(i));
  return names;
}

// `model`'s state dict, exported through a checkpoint as `lockstep export` does.
void export_model(Graph& model, const std::string& checkpoint, const std::string& out, StateDictNames names) {
  CheckpointInfo info;
  info.model_spec = model.spec();
  info.class_names = class_names(model.num_classes());
  save_checkpoint(checkpoint, model, info);
  export_state_dict(read_checkpoint(checkpoint), checkpoint, names, InputPreprocessing{}, out);
}

// Every parameter and running statistic, by name.
std::map<std::string, std::vector<float>> values_of(Graph& model) {
  std::map<std::string, std::vector<float>> out;
  ParameterArenas& a = model.arenas();
  for (size_t i = 0; i < a.entries().size(); ++i) out[a.entries()[i].name] = a.param(i).to_vector();
  for (const ParamEntry& e : model.state_entries())
    out[e.name] = model.state_arena().view(e.offset, e.shape).to_vector();
  return out;
}

double normwise_relative(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(diff / norm);
}

// What every section of the refusal test starts from, made once per process
// (Catch runs a test case again from its top for each section): tv-resnet18
// from seed 1 exported in torchvision's names, and the values of the same
// model from seed 2, which a refused file must leave as they are.
struct RefusalFixture {
  TempDir dir;
  std::string exported_path = dir / "a.safetensors";
  SafetensorsFile good;
  std::map<std::string, std::vector<float>> exported, untouched;

  RefusalFixture() {
    auto a = tv_model("tv-resnet18", Shape{3, 32, 32}, 5, 1);
    export_model(*a, dir / "a.ckpt", exported_path, StateDictNames::torchvision);
    good = read_safetensors(exported_path);
    exported = values_of(*a);
    untouched = values_of(*tv_model("tv-resnet18", Shape{3, 32, 32}, 5, 2));
  }
};

const RefusalFixture& refusal_fixture() {
  static const RefusalFixture fixture;
  return fixture;
}

}  // namespace

TEST_CASE("a tv model's export loads back into another of the same architecture, every tensor equal",
          "[pretrained]") {
  TempDir dir;
  for (auto names : {StateDictNames::torchvision, StateDictNames::timm}) {
    for (const std::string name : {"tv-resnet18", "tv-vgg16-bn"}) {
      // VGG in timm's names only (its classifier as convolutions, the mapping
      // that differs): torchvision's VGG names round-trip through torchvision
      // itself in the torch_pretrained_export test, and each VGG export here
      // moves half a gigabyte.
      if (name == "tv-vgg16-bn" && names == StateDictNames::torchvision) continue;
      DYNAMIC_SECTION(name << (names == StateDictNames::timm ? " timm" : " torchvision")) {
        auto a = tv_model(name, Shape{3, 32, 32}, 5, 1);
        export_model(*a, dir / "a.ckpt", dir / "a.safetensors", names);
        const SafetensorsFile file = read_safetensors(dir / "a.safetensors");
        REQUIRE(file.metadata.at("class_names") == R"(["class0","class1","class2","class3","class4"])");
        std::ifstream classes(dir / "a.classes.txt");
        std::string first;
        std::getline(classes, first);
        REQUIRE(first == "class0");
        if (name == "tv-vgg16-bn") {
          const std::string fc1 = names == StateDictNames::timm ? "pre_logits.fc1.weight" : "classifier.0.weight";
          REQUIRE(file.at(fc1).shape == (names == StateDictNames::timm ? Shape{4096, 512, 7, 7} : Shape{4096, 25088}));
          REQUIRE(file.at("features.1.running_var").shape == Shape{64});
        } else {
          REQUIRE(file.at("layer2.0.downsample.0.weight").shape == Shape{128, 64, 1, 1});
          REQUIRE(file.at("bn1.running_mean").shape == Shape{64});
        }
        auto b = tv_model(name, Shape{3, 32, 32}, 5, 2);
        REQUIRE(values_of(*a) != values_of(*b));
        const PretrainedLoad loaded = load_pretrained(*b, dir / "a.safetensors");
        REQUIRE(loaded.tensors == static_cast<int64_t>(values_of(*a).size()));
        REQUIRE_FALSE(loaded.head_reinitialised);
        REQUIRE((loaded.names == names || name == "tv-resnet18"));  // a ResNet's names are the same in both
        REQUIRE(values_of(*a) == values_of(*b));
      }
    }
  }
}

TEST_CASE("an export keeps class names of any bytes, one a line, and says the input its model was trained on",
          "[pretrained]") {
  TempDir dir;
  auto a = tv_model("tv-resnet18", Shape{3, 32, 32}, 3, 1);
  const std::vector<std::string> names = {"caf\xe9 latin-1", "two\nlines", "back\\slash"};
  CheckpointInfo info;
  info.model_spec = a->spec();
  info.class_names = names;
  save_checkpoint(dir / "a.ckpt", *a, info);
  const InputPreprocessing input{"3x32x32", {0.5f, 0.25f, 0.125f}, {0.2f, 0.3f, 0.4f}};
  export_state_dict(read_checkpoint(dir / "a.ckpt"), dir / "a.ckpt", StateDictNames::torchvision, input,
                    dir / "a.safetensors");
  const SafetensorsFile file = read_safetensors(dir / "a.safetensors");
  REQUIRE(file.metadata.at("input_size") == "3x32x32");
  REQUIRE(file.metadata.count("class_names_hex") == 1);
  std::ifstream in(dir / "a.classes.txt", std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  REQUIRE(text == "caf\\xe9 latin-1\ntwo\\nlines\nback\\\\slash\n");  // three lines for three classes
  // The same names (byte for byte) keep the classifier; the input comes back.
  auto b = tv_model("tv-resnet18", Shape{3, 32, 32}, 3, 2);
  const PretrainedLoad loaded = load_pretrained(*b, read_pretrained(dir / "a.safetensors"), names);
  REQUIRE_FALSE(loaded.head_reinitialised);
  REQUIRE(values_of(*a) == values_of(*b));
  REQUIRE(loaded.file_input.has_value());
  REQUIRE(loaded.file_input->size == input.size);
  REQUIRE(loaded.file_input->mean == input.mean);
  REQUIRE(loaded.file_input->std == input.std);
}

TEST_CASE("another class count re-initialises the classifier alone and says so", "[pretrained]") {
  TempDir dir;
  auto a = tv_model("tv-resnet18", Shape{3, 32, 32}, 5, 1);
  export_model(*a, dir / "a.ckpt", dir / "a.safetensors", StateDictNames::torchvision);
  auto b = tv_model("tv-resnet18", Shape{3, 32, 32}, 3, 2);
  auto before = values_of(*b);
  const PretrainedLoad loaded = load_pretrained(*b, dir / "a.safetensors");
  REQUIRE(loaded.head_reinitialised);
  REQUIRE(loaded.head == "fc");
  REQUIRE(loaded.file_classes == 5);
  auto after = values_of(*b), source = values_of(*a);
  for (auto& [name, values] : after) {
    INFO(name);
    if (name == "fc.weight" || name == "fc.bias")
      REQUIRE(values == before.at(name));
    else
      REQUIRE(values == source.at(name));
  }
}

TEST_CASE("pretrained weights that do not fit are refused naming the file, the tensor and both shapes",
          "[pretrained][errors]") {
  const RefusalFixture& fixture = refusal_fixture();
  const SafetensorsFile& good = fixture.good;
  const auto& untouched = fixture.untouched;
  const std::string& exported = fixture.exported_path;
  TempDir dir;
  auto b = tv_model("tv-resnet18", Shape{3, 32, 32}, 5, 2);
  auto edited = [&](const std::string& file, auto edit) {
    SafetensorsFile f = good;
    edit(f);
    write_safetensors(dir / file, f);
    return dir / file;
  };

  SECTION("a wrong shape") {
    const std::string path = edited("shape.safetensors", [](SafetensorsFile& f) {
      for (auto& [name, t] : f.tensors)
        if (name == "layer1.0.conv1.weight") t = {Shape{64, 64, 1, 9}, t.values};
    });
    REQUIRE_THROWS_WITH(load_pretrained(*b, path),
                        Catch::Contains(path) &&
                            Catch::Contains("layer1.0.conv1.weight is [64, 64, 1, 9] in the file, [64, 64, 3, 3] in "
                                            "the model"));
  }
  SECTION("a missing tensor") {
    const std::string path = edited("missing.safetensors", [](SafetensorsFile& f) {
      std::erase_if(f.tensors, [](auto& t) { return t.first == "bn1.running_var"; });
    });
    REQUIRE_THROWS_WITH(load_pretrained(*b, path),
                        Catch::Contains(path) && Catch::Contains("missing tensor bn1.running_var [64]"));
  }
  SECTION("an extra tensor, while num_batches_tracked is ignored") {
    const std::string counted = edited("counted.safetensors", [](SafetensorsFile& f) {
      f.tensors.push_back({"bn1.num_batches_tracked", {Shape{1}, {7.0f}}});
    });
    auto d = tv_model("tv-resnet18", Shape{3, 32, 32}, 5, 2);
    REQUIRE(load_pretrained(*d, counted).tensors == static_cast<int64_t>(untouched.size()));
    REQUIRE(values_of(*d) == fixture.exported);
    const std::string path = edited("extra.safetensors", [](SafetensorsFile& f) {
      f.tensors.push_back({"layer5.0.conv1.weight", {Shape{2, 2}, {1, 2, 3, 4}}});
    });
    auto c = tv_model("tv-resnet18", Shape{3, 32, 32}, 5, 2);
    REQUIRE_THROWS_WITH(load_pretrained(*c, path),
                        Catch::Contains(path) && Catch::Contains("unexpected tensor layer5.0.conv1.weight [2, 2]"));
    REQUIRE(values_of(*c) == untouched);  // nothing loaded
  }
  SECTION("a PyTorch pickle, by its bytes whatever its name, with the two lines that convert it") {
    for (auto [name, bytes] : {std::pair<std::string, std::string>{"w.pth", std::string("PK\x03\x04rest", 8)},
                               {"w.bin", std::string("PK\x03\x04rest", 8)},
                               {"w.safetensors", std::string("\x80\x02}q\x00", 5)}}) {
      std::ofstream(dir / name, std::ios::binary) << bytes;
      REQUIRE_THROWS_WITH(load_pretrained(*b, dir / name),
                          Catch::Contains(dir / name) && Catch::Contains("PyTorch pickle") &&
                              Catch::Contains("import torch, safetensors.torch") &&
                              Catch::Contains("safetensors.torch.save_file("));
    }
  }
  SECTION("a safetensors file named .pt is read as what it is") {
    fs::copy_file(exported, dir / "w.pt");
    auto c = tv_model("tv-resnet18", Shape{3, 32, 32}, 5, 2);
    REQUIRE(load_pretrained(*c, dir / "w.pt").tensors == static_cast<int64_t>(untouched.size()));
    REQUIRE(values_of(*c) == fixture.exported);
  }
  SECTION("weights or running statistics no model can train from, each named") {
    for (auto [tensor, value, said] : {std::tuple<std::string, float, std::string>{
                                           "layer1.0.conv1.weight", std::nanf(""), "holds NaN (first at index 7 of"},
                                       {"fc.weight", INFINITY, "holds +inf (first at index 7 of 2560)"},
                                       {"bn1.running_mean", std::nanf(""), "holds NaN (first at index 7 of 64)"},
                                       {"layer2.1.bn2.running_var", -0.5f,
                                        "holds a negative variance, -0.5 (first at index 7 of 128)"}}) {
      const std::string path = edited("bad.safetensors", [&](SafetensorsFile& f) {
        for (auto& [name, t] : f.tensors)
          if (name == tensor) t.values[7] = value;
      });
      REQUIRE_THROWS_WITH(load_pretrained(*b, path),
                          Catch::Contains("pretrained weights " + path) && Catch::Contains(tensor + " " + said) &&
                              Catch::Contains("running variances finite and >= 0"));
    }
  }
  SECTION("a training checkpoint: export it first") {
    REQUIRE_THROWS_WITH(load_pretrained(*b, fixture.dir / "a.ckpt"),
                        Catch::Contains(fixture.dir / "a.ckpt" + " is a lockstep training checkpoint") &&
                            Catch::Contains("export it first (lockstep export " + fixture.dir / "a.ckpt") &&
                            !Catch::Contains("momentum.conv1.weight"));
  }
  SECTION("a FIFO is refused unread, never waited on") {
    REQUIRE(::mkfifo((dir / "w.fifo").c_str(), 0600) == 0);
    REQUIRE_THROWS_WITH(load_pretrained(*b, dir / "w.fifo"), Catch::Contains("not a regular file"));
  }
  SECTION("a truncated file") {
    fs::copy_file(exported, dir / "cut.safetensors");
    fs::resize_file(dir / "cut.safetensors", fs::file_size(exported) - 100);
    REQUIRE_THROWS_WITH(load_pretrained(*b, dir / "cut.safetensors"),
                        Catch::Contains(dir / "cut.safetensors") && Catch::Contains("truncated"));
  }
  SECTION("a model that is not torchvision's, and a file that is not there") {
    auto cifar = tv_model("resnet18", Shape{3, 32, 32}, 5, 2);
    REQUIRE_THROWS_WITH(load_pretrained(*cifar, exported),
                        Catch::Contains("not 'resnet18'") && Catch::Contains("tv-resnet18 is torchvision's"));
    REQUIRE_THROWS_WITH(load_pretrained(*b, dir / "none.safetensors"), Catch::Contains("no such file"));
  }
  REQUIRE(values_of(*b) == untouched);
}

TEST_CASE("safetensors F16 and BF16 tensors read as their exact f32 values and I64 comes without values",
          "[pretrained]") {
  TempDir dir;
  // 1, -2.5, 65504 (the largest half), 2^-24 (the smallest subnormal) as F16;
  // 1, -2.5, 3.140625 as BF16; a scalar I64.
  const uint16_t f16[] = {0x3c00, 0xc100, 0x7bff, 0x0001};
  const uint16_t bf16[] = {0x3f80, 0xc020, 0x4049};
  const int64_t count = 42;
  const std::string header =
      R"({"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]},)"
      R"("n":{"dtype":"I64","shape":[],"data_offsets":[14,22]}})";
  std::ofstream out(dir / "h.safetensors", std::ios::binary);
  const uint64_t size = header.size();
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << header;
  out.write(reinterpret_cast<const char*>(f16), sizeof f16);
  out.write(reinterpret_cast<const char*>(bf16), sizeof bf16);
  out.write(reinterpret_cast<const char*>(&count), 8);
  out.close();
  const SafetensorsFile f = read_safetensors(dir / "h.safetensors", true, true);
  REQUIRE(f.at("a").values == std::vector<float>{1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24)});
  REQUIRE(f.at("b").values == std::vector<float>{1.0f, -2.5f, 3.140625f});
  REQUIRE(f.at("n").dtype == "I64");
  REQUIRE(f.at("n").values.empty());
  // Checkpoints stay F32 only.
  REQUIRE_THROWS_WITH(read_safetensors(dir / "h.safetensors"), Catch::Contains("expected F32"));
}

TEST_CASE("export refuses a checkpoint of a model that is not torchvision's", "[pretrained][errors]") {
  TempDir dir;
  auto model = tv_model("resnet20", Shape{3, 8, 8}, 3, 1);
  CheckpointInfo info;
  info.model_spec = model->spec();
  info.class_names = class_names(3);
  save_checkpoint(dir / "c.ckpt", *model, info);
  REQUIRE_THROWS_WITH(export_state_dict(read_checkpoint(dir / "c.ckpt"), dir / "c.ckpt", StateDictNames::torchvision,
                                        InputPreprocessing{}, dir / "out.safetensors"),
                      Catch::Contains(dir / "c.ckpt") && Catch::Contains("not 'resnet20'"));
  REQUIRE_FALSE(fs::exists(dir / "out.safetensors"));
}

namespace {

const std::string& pretrained_dir() {
  static const std::string dir = [] {
    const char* d = std::getenv("LOCKSTEP_TORCH_PRETRAINED");
    if (!d || !*d)
      FAIL("LOCKSTEP_TORCH_PRETRAINED is not set: run the [torch][pretrained] tests through ctest "
           "(tests/torch.cmake), whose fixture writes torchvision's models with tests/torch/pretrained_oracle.py");
    return std::string(d);
  }();
  return dir;
}

}  // namespace

TEST_CASE("torchvision's resnet18 resnet50 and vgg16 give their logits in lockstep, and export back",
          "[.torch][pretrained]") {
  struct Case {
    std::string file, io, logits, model;
    StateDictNames names;
    bool checkpoint;  // write the checkpoint pretrained_oracle.py check exports
  };
  const std::vector<Case> cases = {
      {"resnet18", "resnet18", "logits", "tv-resnet18", StateDictNames::torchvision, true},
      {"resnet18_timm", "resnet18", "logits", "tv-resnet18", StateDictNames::torchvision, false},
      {"resnet18_f16", "resnet18", "logits_f16", "tv-resnet18", StateDictNames::torchvision, false},
      {"resnet18_bf16", "resnet18", "logits_bf16", "tv-resnet18", StateDictNames::torchvision, false},
      {"resnet50", "resnet50", "logits", "tv-resnet50", StateDictNames::torchvision, true},
      {"resnet50_timm", "resnet50", "logits", "tv-resnet50", StateDictNames::torchvision, false},
      {"vgg16", "vgg16", "logits", "tv-vgg16", StateDictNames::torchvision, true},
      {"vgg16_timm", "vgg16", "logits", "tv-vgg16", StateDictNames::timm, false},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.file) {
      const fs::path dir = pretrained_dir();
      const SafetensorsFile io = read_safetensors((dir / (c.io + ".io.safetensors")).string());
      const HostTensor& images = io.at("images");
      const HostTensor& want = io.at(c.logits);
      auto model = tv_model(c.model, Shape{images.shape[1], images.shape[2], images.shape[3]}, want.shape[1], 5);
      const PretrainedLoad loaded = load_pretrained(*model, (dir / (c.file + ".safetensors")).string());
      REQUIRE(loaded.names == c.names);
      REQUIRE_FALSE(loaded.head_reinitialised);
      Context ctx(Device::cpu(), lockstep::testing::reference_options());
      const std::vector<float> got = model->logits(ctx, Tensor::from_vector(images.shape, images.values)).to_vector();
      const double difference = normwise_relative(got, want.values);
      std::printf("%s (%s): normwise relative logit difference to torchvision %.3g\n", c.file.c_str(),
                  c.model.c_str(), difference);
      CHECK(difference <= 1e-4);
      if (c.checkpoint) {
        CheckpointInfo info;
        info.model_spec = model->spec();
        info.class_names = class_names(model->num_classes());
        save_checkpoint((dir / (c.file + ".checkpoint.safetensors")).string(), *model, info);
      }
    }
  }
}
