#include "training/checkpoint.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "training/safetensors.h"

namespace lockstep {

namespace {

using json = nlohmann::json;
constexpr const char* format_tag = "lockstep-checkpoint-1";

struct NamedTensor {
  std::string name;
  Shape shape;
  Tensor tensor;
};

// Every tensor a checkpoint holds, in a fixed order.
std::vector<NamedTensor> checkpoint_tensors(Model& model) {
  std::vector<NamedTensor> out;
  ParameterArenas& a = model.arenas();
  for (size_t i = 0; i < a.entries().size(); ++i) out.push_back({a.entries()[i].name, a.entries()[i].shape, a.param(i)});
  for (const ParamEntry& e : model.state_entries())
    out.push_back({e.name, e.shape, model.state_arena().view(e.offset, e.shape)});
  for (size_t i = 0; i < a.entries().size(); ++i)
    out.push_back({"momentum." + a.entries()[i].name, a.entries()[i].shape,
                   a.momentum.view(a.entries()[i].offset, a.entries()[i].shape)});
  return out;
}

CheckpointInfo info_from(const std::map<std::string, std::string>& meta, const std::string& path) {
  auto it = meta.find("format");
  LS_CHECK(it != meta.end() && it->second == format_tag, "file ", path, " is not a lockstep checkpoint (no '",
           format_tag, "' in its metadata)");
  try {
    CheckpointInfo info;
    info.model_spec = meta.at("model");
    info.class_names = json::parse(meta.at("class_names")).get<std::vector<std::string>>();
    info.epoch = std::stoll(meta.at("epoch"));
    info.step = std::stoll(meta.at("step"));
    info.batch_in_epoch = std::stoll(meta.at("batch_in_epoch"));
    info.seed = std::stoull(meta.at("seed"));
    for (auto& [key, value] : meta)
      if (key.rfind("extra.", 0) == 0) info.extra[key.substr(6)] = value;
    return info;
  } catch (const std::exception& e) {
    LS_FAIL("checkpoint ", path, " has damaged metadata: ", e.what());
  }
}

}  // namespace

void save_checkpoint(const std::string& path, Model& model, const CheckpointInfo& info) {
  SafetensorsFile file;
  for (const NamedTensor& t : checkpoint_tensors(model)) file.tensors.push_back({t.name, {t.shape, t.tensor.to_vector()}});
  file.metadata = {{"format", format_tag},
                   {"model", info.model_spec},
                   {"class_names", json(info.class_names).dump()},
                   {"epoch", std::to_string(info.epoch)},
                   {"step", std::to_string(info.step)},
                   {"batch_in_epoch", std::to_string(info.batch_in_epoch)},
                   {"seed", std::to_string(info.seed)},
                   {"crc32", tensor_data_crc32(file)}};
  for (auto& [key, value] : info.extra) file.metadata["extra." + key] = value;
  write_safetensors(path, file);
}

CheckpointInfo read_checkpoint_info(const std::string& path) {
  return info_from(read_safetensors(path, false).metadata, path);
}

LoadedCheckpoint read_checkpoint(const std::string& path) {
  SafetensorsFile file;
  try {
    file = read_safetensors(path);
  } catch (const Error& e) {
    LS_FAIL("checkpoint ", path, " is damaged or unreadable: ", e.what());
  }
  LoadedCheckpoint ck;
  ck.info = info_from(file.metadata, path);
  LS_CHECK(file.metadata.count("crc32") && file.metadata.at("crc32") == tensor_data_crc32(file), "checkpoint ", path,
           " is damaged: its tensor data does not match the checksum it was written with");
  for (auto& [name, t] : file.tensors) ck.tensors[name] = {t.shape, std::move(t.values)};
  return ck;
}

void load_into(Model& model, const LoadedCheckpoint& ck, const std::string& path) {
  std::vector<NamedTensor> targets = checkpoint_tensors(model);
  std::string problems;
  for (const NamedTensor& t : targets) {
    auto it = ck.tensors.find(t.name);
    if (it == ck.tensors.end())
      problems += "\n  missing tensor " + t.name + " " + t.shape.str();
    else if (it->second.first != t.shape)
      problems += "\n  " + t.name + " is " + it->second.first.str() + " in the file, " + t.shape.str() + " in the model";
  }
  for (auto& [name, value] : ck.tensors) {
    bool known = false;
    for (const NamedTensor& t : targets) known = known || t.name == name;
    if (!known) problems += "\n  unexpected tensor " + name + " " + value.first.str();
  }
  LS_CHECK(problems.empty(), "checkpoint ", path, " (model '", ck.info.model_spec, "') does not fit model '",
           model.spec(), "':", problems);
  for (NamedTensor& t : targets) {
    const auto& [shape, values] = ck.tensors.at(t.name);
    t.tensor.copy_from(Tensor::from_vector(shape, values));
  }
}

}  // namespace lockstep
