#include "training/pretrained.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/regular_file.h"
#include "training/classes_text.h"
#include "training/metadata_text.h"
#include "training/replaced_file.h"
#include "training/safetensors.h"
#include "training/state_values.h"

namespace lockstep {

namespace {

std::string model_name_of(const std::string& spec) { return spec.substr(0, spec.find(' ')); }

bool is_vgg(const std::string& model_name) { return model_name.rfind("tv-vgg", 0) == 0; }

}  // namespace

void check_torchvision_model(const std::string& spec, const std::string& what) {
  const std::string name = model_name_of(spec);
  LS_CHECK(name.rfind("tv-", 0) == 0, what, " works with the torchvision-exact models (tv-resnet18, tv-resnet34, ",
           "tv-resnet50, tv-vgg16, tv-vgg16-bn), not '", name, "'",
           name == "resnet18" || name == "resnet50" || name == "vgg16" || name == "vgg16-bn"
               ? " (the CIFAR-sized variant; tv-" + name + " is torchvision's)"
               : std::string());
}

namespace {

// Our name's tensor in the file, and its shape there: timm's VGG holds the
// first two classifier layers as convolutions over the 512x7x7 features.
std::pair<std::string, Shape> file_tensor(const std::string& ours, const Shape& shape, StateDictNames names,
                                          bool vgg) {
  if (names != StateDictNames::timm || !vgg) return {ours, shape};
  auto renamed = [&](const char* from, const char* to) -> std::optional<std::string> {
    const std::string prefix = std::string(from) + ".";
    if (ours.rfind(prefix, 0) != 0) return std::nullopt;
    return std::string(to) + "." + ours.substr(prefix.size());
  };
  const bool weight = ours.size() > 7 && ours.compare(ours.size() - 7, 7, ".weight") == 0;
  if (auto n = renamed("classifier.0", "pre_logits.fc1"))
    return {*n, weight ? Shape{shape[0], 512, 7, 7} : shape};
  if (auto n = renamed("classifier.3", "pre_logits.fc2"))
    return {*n, weight ? Shape{shape[0], shape[1], 1, 1} : shape};
  if (auto n = renamed("classifier.6", "head.fc")) return {*n, shape};
  return {ours, shape};
}

std::string head_of(const std::string& model_name, StateDictNames names) {
  if (!is_vgg(model_name)) return "fc";
  return names == StateDictNames::timm ? "head.fc" : "classifier.6";
}

bool is_batch_count(const std::string& name) {
  const std::string suffix = ".num_batches_tracked";
  return name == "num_batches_tracked" ||
         (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

// PyTorch's torch.save writes a zip archive (since 1.6) or a bare pickle
// (protocol 2 and up start with 0x80): refused unread, a pickle can run code.
// Known by its first bytes, not its name: a safetensors file named .pt is read.
void refuse_pickle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[4] = {0, 0, 0, 0};
  in.read(head, 4);
  const bool zip = in.gcount() == 4 && std::string(head, 4) == std::string("PK\x03\x04", 4);
  const bool pickle = in.gcount() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5;
  LS_CHECK(!(zip || pickle), path,
           " is a PyTorch pickle (torch.save), which lockstep does not read (unpickling can run any code); "
           "convert it to safetensors with PyTorch and the safetensors package:\n"
           "  import torch, safetensors.torch\n"
           "  safetensors.torch.save_file({k: v.contiguous() for k, v in torch.load('",
           path, "', map_location='cpu').items()}, 'weights.safetensors')");
}

// The input an export says its model was trained on, if it says.
std::optional<InputPreprocessing> file_input(const std::map<std::string, std::string>& metadata) {
  const auto size = metadata.find("input_size"), mean = metadata.find("input_mean"), std = metadata.find("input_std");
  if (size == metadata.end() || mean == metadata.end() || std == metadata.end()) return std::nullopt;
  try {
    return InputPreprocessing{size->second, nlohmann::json::parse(mean->second).get<std::vector<float>>(),
                              nlohmann::json::parse(std->second).get<std::vector<float>>()};
  } catch (const std::exception&) {  // not an export's: nothing to report
    return std::nullopt;
  }
}

}  // namespace

StateDictNames parse_state_dict_names(const std::string& text, const std::string& what) {
  if (text == "torchvision") return StateDictNames::torchvision;
  if (text == "timm") return StateDictNames::timm;
  LS_FAIL(what, " '", text, "': expected torchvision or timm");
}

PretrainedWeights read_pretrained(const std::string& path) {
  // Its kind before any byte is read: the pickle sniffing below would block on a FIFO.
  const std::string not_a_file = not_a_file_reason(path);
  LS_CHECK(not_a_file.empty(), "pretrained weights ", path, " ", not_a_file, "; give a safetensors file of weights");
  refuse_pickle(path);
  PretrainedWeights weights{path, {}};
  try {
    weights.file = std::make_shared<const SafetensorsReader>(path, /*any_dtype=*/true);
  } catch (const Error& e) {
    LS_FAIL("pretrained weights ", path, " are not a readable safetensors file: ", e.what());
  }
  LS_CHECK(!is_checkpoint_metadata(weights.file->metadata()), path,
           " is a lockstep training checkpoint (with the optimizer's momentum), not a state dict of weights: "
           "export it first (lockstep export ", path, " weights.safetensors) and give --init weights.safetensors, "
           "or go on with that run (--resume ", path, ")");
  return weights;
}

std::optional<InputPreprocessing> pretrained_input(const PretrainedWeights& weights) {
  return file_input(weights.file->metadata());
}

namespace {

// The class names an export wrote into the metadata, byte for byte, or none.
std::vector<std::string> file_class_names(const std::map<std::string, std::string>& metadata) {
  if (!metadata.count("class_names")) return {};
  try {
    return read_class_names(metadata, "");
  } catch (const Error&) {  // damaged names in someone else's file: as if none
    return {};
  }
}

}  // namespace

PretrainedLoad load_pretrained(Model& model, const std::string& path) {
  check_torchvision_model(model.spec(), "pretrained weights (" + path + ")");
  return load_pretrained(model, read_pretrained(path));
}

PretrainedLoad load_pretrained(Model& model, const PretrainedWeights& weights,
                               const std::vector<std::string>& class_names) {
  const std::string& path = weights.path;
  const SafetensorsReader& file = *weights.file;
  check_torchvision_model(model.spec(), "pretrained weights (" + path + ")");
  std::map<std::string, const SafetensorsEntry*> in_file;
  for (const SafetensorsEntry& e : file.entries()) in_file[e.name] = &e;

  const std::string model_name = model_name_of(model.spec());
  const bool vgg = is_vgg(model_name);
  PretrainedLoad result;
  if (in_file.count("head.fc.weight") || in_file.count("pre_logits.fc1.weight")) result.names = StateDictNames::timm;
  result.head = head_of(model_name, result.names);

  std::vector<StateTensor> targets = model_state_tensors(model);  // named as torchvision's
  // The classifier: another class count (the same feature count) is a new head.
  const Shape* ours_head = nullptr;
  for (const StateTensor& t : targets)
    if (file_tensor(t.name, t.shape, result.names, vgg).first == result.head + ".weight") ours_head = &t.shape;
  auto head_weight = in_file.find(result.head + ".weight"), head_bias = in_file.find(result.head + ".bias");
  if (ours_head && head_weight != in_file.end() && head_bias != in_file.end()) {
    const Shape& w = head_weight->second->shape;
    result.file_classes = w.rank() == 2 ? w[0] : 0;
    const bool fits_features = w.rank() == 2 && w[1] == (*ours_head)[1] && head_bias->second->shape == Shape{w[0]};
    result.head_reinitialised = fits_features && w[0] != (*ours_head)[0];
    // As many classes, but others (an export names them): a head for the
    // file's classes would start this run from their answers.
    if (fits_features && !result.head_reinitialised && !class_names.empty()) {
      result.file_class_names = file_class_names(file.metadata());
      result.head_reinitialised = result.other_classes =
          !result.file_class_names.empty() && result.file_class_names != class_names;
    }
  }

  // Names, shapes and dtypes first, from the header alone: a file of other
  // tensors is refused before any of its data is read.
  std::string problems, values_problems;
  std::map<std::string, bool> used;
  std::vector<const SafetensorsEntry*> sources(targets.size(), nullptr);
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto [name, shape] = file_tensor(targets[i].name, targets[i].shape, result.names, vgg);
    used[name] = true;
    if (result.head_reinitialised && (name == result.head + ".weight" || name == result.head + ".bias")) continue;
    auto it = in_file.find(name);
    if (it == in_file.end()) {
      problems += "\n  missing tensor " + name + " " + shape.str();
    } else if (it->second->shape != shape) {
      problems += "\n  " + name + " is " + it->second->shape.str() + " in the file, " + shape.str() + " in the model";
    } else if (it->second->dtype != "F32" && it->second->dtype != "F16" && it->second->dtype != "BF16") {
      problems += "\n  " + name + " has dtype " + it->second->dtype + " (F32, F16 or BF16 are read)";
    } else {
      sources[i] = it->second;
    }
  }
  for (auto& [name, e] : in_file)
    if (!used.count(name) && !is_batch_count(name)) problems += "\n  unexpected tensor " + name + " " + e->shape.str();
  LS_CHECK(problems.empty(), "pretrained weights ", path, " do not fit model '", model.spec(), "' (",
           result.names == StateDictNames::timm ? "timm" : "torchvision", " names):", problems);
  // Then the tensors taken, each read alone and checked before any is copied.
  std::vector<std::vector<float>> values(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!sources[i]) continue;
    try {
      values[i] = file.read(*sources[i]).values;
    } catch (const Error& e) {
      LS_FAIL("pretrained weights ", path, " cannot be read: ", e.what());
    }
    if (const std::string bad = state_value_problem(sources[i]->name, values[i]); !bad.empty())
      values_problems += "\n  " + sources[i]->name + " " + bad;
  }
  // Trained with, such values give NaN losses or a constant one, and a
  // "diverged" that blames the learning rate a few steps later.
  LS_CHECK(values_problems.empty(), "pretrained weights ", path, " hold values no model can be trained from:",
           values_problems, "\n(weights and running means must be finite, running variances finite and >= 0); "
           "the file is damaged or was not saved from a trained model");
  result.file_input = file_input(file.metadata());

  for (size_t i = 0; i < targets.size(); ++i) {
    if (!sources[i]) continue;
    targets[i].tensor.copy_from(Tensor::from_vector(targets[i].shape, values[i]));
    std::vector<float>().swap(values[i]);  // the host copy goes as the model takes it
    ++result.tensors;
  }
  model.arenas().params_bf16_stale = true;  // precision bf16: the weights' copy is made again
  return result;
}

std::string classes_path(const std::string& out_path) {
  std::filesystem::path p(out_path);
  if (p.extension() == ".safetensors") p.replace_extension();
  return p.string() + ".classes.txt";
}

bool is_export_metadata(const std::map<std::string, std::string>& metadata) {
  return metadata.count("lockstep_model") && !is_checkpoint_metadata(metadata);
}

void export_state_dict(const LoadedCheckpoint& checkpoint, const std::string& checkpoint_path, StateDictNames names,
                       const InputPreprocessing& input, const std::string& out_path) {
  check_torchvision_model(checkpoint.info.model_spec, "export (checkpoint " + checkpoint_path + ")");
  const bool vgg = is_vgg(model_name_of(checkpoint.info.model_spec));
  SafetensorsFile file;
  for (auto& [name, tensor] : checkpoint.tensors) {
    if (is_optimizer_state(name)) continue;
    auto [file_name, shape] = file_tensor(name, tensor.first, names, vgg);
    file.tensors.push_back({file_name, {shape, tensor.second}});
  }
  file.metadata["format"] = "pt";  // what safetensors.torch.save_file writes
  put_class_names(file.metadata, checkpoint.info.class_names);
  file.metadata["lockstep_model"] = checkpoint.info.model_spec;
  file.metadata["input_size"] = input.size;
  file.metadata["input_mean"] = nlohmann::json(input.mean).dump();
  file.metadata["input_std"] = nlohmann::json(input.std).dump();
  write_safetensors(out_path, file);
  const std::string text = classes_text(checkpoint.info.class_names);
  try {
    write_replacing(classes_path(out_path),
                    [&](std::FILE* f) { return std::fwrite(text.data(), 1, text.size(), f) == text.size(); });
  } catch (const Error& e) {
    LS_FAIL("cannot write the class names of ", out_path, ": ", e.what());
  }
}

}  // namespace lockstep
