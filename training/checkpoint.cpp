#include "training/checkpoint.h"

#include <charconv>
#include <optional>

#include "base/error.h"
#include "training/metadata_text.h"
#include "training/safetensors.h"

namespace lockstep {

namespace {

constexpr const char* format_tag = "lockstep-checkpoint-1";

// Every tensor a checkpoint holds, in a fixed order: the model's, then the
// optimizer's state, whose names say which optimizer kept it (SGD's
// momentum, AdamW's exp_avg and exp_avg_sq as torch.optim.AdamW's state),
// then the moving average of the weights and statistics under the model's
// names after "ema." (--ema, as timm's ModelEmaV3 averages the state dict).
std::vector<StateTensor> checkpoint_tensors(Model& model, bool with_optimizer_state = true) {
  std::vector<StateTensor> out = model_state_tensors(model);
  if (!with_optimizer_state) return out;
  ParameterArenas& a = model.arenas();
  const bool adamw = a.exp_avg_sq.defined();
  for (size_t i = 0; i < a.entries().size(); ++i)
    out.push_back({(adamw ? "exp_avg." : "momentum.") + a.entries()[i].name, a.entries()[i].shape,
                   a.momentum.view(a.entries()[i].offset, a.entries()[i].shape)});
  if (adamw)
    for (size_t i = 0; i < a.entries().size(); ++i)
      out.push_back({"exp_avg_sq." + a.entries()[i].name, a.entries()[i].shape,
                     a.exp_avg_sq.view(a.entries()[i].offset, a.entries()[i].shape)});
  if (a.ema.defined()) {
    for (const ParamEntry& e : a.entries()) out.push_back({"ema." + e.name, e.shape, a.ema.view(e.offset, e.shape)});
    for (const ParamEntry& e : model.state_entries())
      out.push_back({"ema." + e.name, e.shape, a.ema_state.view(e.offset, e.shape)});
  }
  return out;
}

// A metadata field that must be a non-negative decimal integer, whole.
template <typename T> T metadata_count(const std::map<std::string, std::string>& meta, const std::string& key,
                                       const std::string& path) {
  auto it = meta.find(key);
  LS_CHECK(it != meta.end(), "checkpoint ", path, " has damaged metadata: no '", key, "'");
  const std::string& text = it->second;
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  LS_CHECK(!text.empty() && text[0] != '-' && text[0] != '+' && error == std::errc() &&
               end == text.data() + text.size() && value >= 0,
           "checkpoint ", path, " has damaged metadata: '", key, "' is \"", text, "\", not a non-negative integer");
  return value;
}

CheckpointInfo info_from(const std::map<std::string, std::string>& meta, const std::string& path) {
  LS_CHECK(is_checkpoint_metadata(meta), "file ", path, " is not a lockstep checkpoint (no '",
           format_tag, "' in its metadata)");
  CheckpointInfo info;
  auto model = meta.find("model");
  LS_CHECK(model != meta.end(), "checkpoint ", path, " has damaged metadata: no 'model'");
  info.model_spec = model->second;
  info.class_names = read_class_names(meta, "checkpoint " + path);
  info.epoch = metadata_count<int64_t>(meta, "epoch", path);
  info.step = metadata_count<int64_t>(meta, "step", path);
  info.batch_in_epoch = metadata_count<int64_t>(meta, "batch_in_epoch", path);
  info.seed = metadata_count<uint64_t>(meta, "seed", path);
  for (auto& [key, value] : meta) {
    if (key.rfind("extra.", 0) != 0) continue;
    const bool hex = key.size() > 10 && key.compare(key.size() - 4, 4, "_hex") == 0;
    const std::string name = key.substr(6, key.size() - 6 - (hex ? 4 : 0));
    if (!hex) {
      info.extra.try_emplace(name, value);  // an exact _hex value, read before or after, wins
      continue;
    }
    std::optional<std::string> bytes = from_hex(value);
    LS_CHECK(bytes.has_value(), "checkpoint ", path, " has damaged metadata: '", key, "' is not hex digits");
    info.extra[name] = *bytes;
  }
  return info;
}

}  // namespace

bool is_optimizer_state(const std::string& name) {
  for (const char* prefix : {"momentum.", "exp_avg.", "exp_avg_sq.", "ema."})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

bool is_checkpoint_metadata(const std::map<std::string, std::string>& metadata) {
  const auto it = metadata.find("format");
  return it != metadata.end() && it->second == format_tag;
}

std::vector<StateTensor> model_state_tensors(Model& model) {
  std::vector<StateTensor> out;
  ParameterArenas& a = model.arenas();
  for (size_t i = 0; i < a.entries().size(); ++i) out.push_back({a.entries()[i].name, a.entries()[i].shape, a.param(i)});
  for (const ParamEntry& e : model.state_entries())
    out.push_back({e.name, e.shape, model.state_arena().view(e.offset, e.shape)});
  return out;
}

void save_checkpoint(const std::string& path, Model& model, const CheckpointInfo& info) {
  SafetensorsFile file;
  for (const StateTensor& t : checkpoint_tensors(model)) file.tensors.push_back({t.name, {t.shape, t.tensor.to_vector()}});
  file.metadata = {{"format", format_tag},
                   {"model", info.model_spec},
                   {"epoch", std::to_string(info.epoch)},
                   {"step", std::to_string(info.step)},
                   {"batch_in_epoch", std::to_string(info.batch_in_epoch)},
                   {"seed", std::to_string(info.seed)},
                   {"crc32", tensor_data_crc32(file)}};
  put_class_names(file.metadata, info.class_names);
  for (auto& [key, value] : info.extra) put_text(file.metadata, "extra." + key, value);
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

void load_into(Model& model, const LoadedCheckpoint& ck, const std::string& path, bool with_optimizer_state) {
  // The class names are metadata, which the checksum does not cover: an
  // edited list would label every prediction with another class's name.
  LS_CHECK(ck.info.class_names.empty() || static_cast<int64_t>(ck.info.class_names.size()) == model.num_classes(),
           "checkpoint ", path, " has damaged metadata: ", ck.info.class_names.size(), " class names for its model's ",
           model.num_classes(), " classes");
  std::vector<StateTensor> targets = checkpoint_tensors(model, with_optimizer_state);
  // A checkpoint without a moving average leaves the model's as it is (the caller starts it again).
  if (!has_ema(ck))
    std::erase_if(targets, [](const StateTensor& t) { return t.name.rfind("ema.", 0) == 0; });
  std::string problems;
  for (const StateTensor& t : targets) {
    auto it = ck.tensors.find(t.name);
    if (it == ck.tensors.end())
      problems += "\n  missing tensor " + t.name + " " + t.shape.str();
    else if (it->second.first != t.shape)
      problems += "\n  " + t.name + " is " + it->second.first.str() + " in the file, " + t.shape.str() + " in the model";
  }
  for (auto& [name, value] : ck.tensors) {
    if (!with_optimizer_state && is_optimizer_state(name)) continue;
    bool known = false;
    for (const StateTensor& t : targets) known = known || t.name == name;
    if (!known) problems += "\n  unexpected tensor " + name + " " + value.first.str();
  }
  LS_CHECK(problems.empty(), "checkpoint ", path, " (model '", ck.info.model_spec, "') does not fit model '",
           model.spec(), "':", problems);
  for (StateTensor& t : targets) {
    const auto& [shape, values] = ck.tensors.at(t.name);
    t.tensor.copy_from(Tensor::from_vector(shape, values));
  }
  model.arenas().params_bf16_stale = true;  // precision bf16: the weights' copy is made again
}

bool has_ema(const LoadedCheckpoint& checkpoint) {
  for (const auto& [name, tensor] : checkpoint.tensors)
    if (name.rfind("ema.", 0) == 0) return true;
  return false;
}

LoadedCheckpoint without_ema(LoadedCheckpoint checkpoint) {
  std::erase_if(checkpoint.tensors, [](const auto& entry) { return entry.first.rfind("ema.", 0) == 0; });
  return checkpoint;
}

LoadedCheckpoint with_ema_weights(LoadedCheckpoint checkpoint, const std::string& path) {
  std::string missing;
  for (auto& [name, tensor] : checkpoint.tensors) {
    if (is_optimizer_state(name)) continue;
    const auto average = checkpoint.tensors.find("ema." + name);
    if (average == checkpoint.tensors.end() || average->second.first != tensor.first)
      missing += (missing.empty() ? "" : ", ") + name;
    else
      tensor.second = average->second.second;
  }
  LS_CHECK(missing.empty(), "checkpoint ", path, " holds a moving average of its weights without (or in another "
           "shape than) ", missing);
  return without_ema(std::move(checkpoint));
}

}  // namespace lockstep
