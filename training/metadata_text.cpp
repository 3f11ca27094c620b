#include "training/metadata_text.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "training/safetensors.h"

namespace lockstep {

namespace {

using json = nlohmann::json;

std::string to_hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

std::string readable(const std::string& bytes) {
  return json::parse(json(bytes).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

}  // namespace

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

void put_text(Metadata& meta, const std::string& key, const std::string& value) {
  if (valid_utf8(value)) {
    meta[key] = value;
    return;
  }
  meta[key] = readable(value);
  meta[key + "_hex"] = to_hex(value);
}

void put_class_names(Metadata& meta, const std::vector<std::string>& names) {
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

std::vector<std::string> read_class_names(const Metadata& meta, const std::string& owner) {
  auto names = meta.find("class_names");
  LS_CHECK(names != meta.end(), owner, " has damaged metadata: no 'class_names'");
  auto strings = [&](const std::string& key, const std::string& text) {
    const json parsed = json::parse(text, nullptr, false);
    bool all_strings = parsed.is_array();
    for (const json& name : parsed) all_strings = all_strings && name.is_string();
    LS_CHECK(all_strings, owner, " has damaged metadata: '", key, "' is not a JSON array of strings");
    return parsed.get<std::vector<std::string>>();
  };
  std::vector<std::string> out = strings("class_names", names->second);
  auto hex = meta.find("class_names_hex");
  if (hex == meta.end()) return out;
  std::vector<std::string> exact = strings("class_names_hex", hex->second);
  LS_CHECK(exact.size() == out.size(), owner, " has damaged metadata: 'class_names_hex' has ", exact.size(),
           " names, 'class_names' ", out.size());
  for (size_t i = 0; i < exact.size(); ++i) {
    std::optional<std::string> bytes = from_hex(exact[i]);
    LS_CHECK(bytes.has_value(), owner, " has damaged metadata: class name ", i, " in 'class_names_hex' is not hex digits");
    out[i] = *bytes;
  }
  return out;
}

}  // namespace lockstep
