#include "training/checkpoint.h"

#include <charconv>
#include <optional>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "training/safetensors.h"

namespace lockstep {

namespace {

using json = nlohmann::json;
constexpr const char* format_tag = "lockstep-checkpoint-1";

// Every tensor a checkpoint holds, in a fixed order.
std::vector<StateTensor> checkpoint_tensors(Model& model) {
  std::vector<StateTensor> out = model_state_tensors(model);
  ParameterArenas& a = model.arenas();
  for (size_t i = 0; i < a.entries().size(); ++i)
    out.push_back({"momentum." + a.entries()[i].name, a.entries()[i].shape,
                   a.momentum.view(a.entries()[i].offset, a.entries()[i].shape)});
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

// Class folder names and paths are bytes on Linux, not always UTF-8, while
// the safetensors header is JSON text. A value that is not UTF-8 is stored
// twice: readable (invalid bytes as U+FFFD) under its key, for other tools,
// and exactly as hex digits under the "_hex" key, which this reader prefers.
std::string to_hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

std::optional<std::string> from_hex(const std::string& hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(hex.data() + i, hex.data() + i + 2, value, 16);
    if (error != std::errc() || end != hex.data() + i + 2) return std::nullopt;
    out += static_cast<char>(value);
  }
  return out;
}

std::string readable(const std::string& bytes) {
  return json::parse(json(bytes).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

void put_text(std::map<std::string, std::string>& meta, const std::string& key, const std::string& value) {
  if (valid_utf8(value)) {
    meta[key] = value;
    return;
  }
  meta[key] = readable(value);
  meta[key + "_hex"] = to_hex(value);
}

void put_class_names(std::map<std::string, std::string>& meta, const std::vector<std::string>& names) {
  json readable_names = json::array(), hex_names = json::array();
  bool all_utf8 = true;
  for (const std::string& name : names) {
    all_utf8 = all_utf8 && valid_utf8(name);
    readable_names.push_back(readable(name));
    hex_names.push_back(to_hex(name));
  }
  meta["class_names"] = readable_names.dump();
  if (!all_utf8) meta["class_names_hex"] = hex_names.dump();
}

std::vector<std::string> class_names_from(const std::map<std::string, std::string>& meta, const std::string& path) {
  auto names = meta.find("class_names");
  LS_CHECK(names != meta.end(), "checkpoint ", path, " has damaged metadata: no 'class_names'");
  auto strings = [&](const std::string& key, const std::string& text) {
    const json parsed = json::parse(text, nullptr, false);
    bool all_strings = parsed.is_array();
    for (const json& name : parsed) all_strings = all_strings && name.is_string();
    LS_CHECK(all_strings, "checkpoint ", path, " has damaged metadata: '", key, "' is not a JSON array of strings");
    return parsed.get<std::vector<std::string>>();
  };
  std::vector<std::string> out = strings("class_names", names->second);
  auto hex = meta.find("class_names_hex");
  if (hex == meta.end()) return out;
  std::vector<std::string> exact = strings("class_names_hex", hex->second);
  LS_CHECK(exact.size() == out.size(), "checkpoint ", path, " has damaged metadata: 'class_names_hex' has ",
           exact.size(), " names, 'class_names' ", out.size());
  for (size_t i = 0; i < exact.size(); ++i) {
    std::optional<std::string> bytes = from_hex(exact[i]);
    LS_CHECK(bytes.has_value(), "checkpoint ", path, " has damaged metadata: class name ", i,
             " in 'class_names_hex' is not hex digits");
    out[i] = *bytes;
  }
  return out;
}

CheckpointInfo info_from(const std::map<std::string, std::string>& meta, const std::string& path) {
  auto it = meta.find("format");
  LS_CHECK(it != meta.end() && it->second == format_tag, "file ", path, " is not a lockstep checkpoint (no '",
           format_tag, "' in its metadata)");
  CheckpointInfo info;
  auto model = meta.find("model");
  LS_CHECK(model != meta.end(), "checkpoint ", path, " has damaged metadata: no 'model'");
  info.model_spec = model->second;
  info.class_names = class_names_from(meta, path);
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

void load_into(Model& model, const LoadedCheckpoint& ck, const std::string& path) {
  // The class names are metadata, which the checksum does not cover: an
  // edited list would label every prediction with another class's name.
  LS_CHECK(ck.info.class_names.empty() || static_cast<int64_t>(ck.info.class_names.size()) == model.num_classes(),
           "checkpoint ", path, " has damaged metadata: ", ck.info.class_names.size(), " class names for its model's ",
           model.num_classes(), " classes");
  std::vector<StateTensor> targets = checkpoint_tensors(model);
  std::string problems;
  for (const StateTensor& t : targets) {
    auto it = ck.tensors.find(t.name);
    if (it == ck.tensors.end())
      problems += "\n  missing tensor " + t.name + " " + t.shape.str();
    else if (it->second.first != t.shape)
      problems += "\n  " + t.name + " is " + it->second.first.str() + " in the file, " + t.shape.str() + " in the model";
  }
  for (auto& [name, value] : ck.tensors) {
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

}  // namespace lockstep
