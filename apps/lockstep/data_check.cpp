#include "data_check.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/printable.h"
#include "data/data_identity.h"

namespace lockstep::app {

namespace {

nlohmann::json identity_json(const data::Dataset& set) {
  const data::DataIdentity id = data::data_identity(set);
  return {{"samples", id.samples},
          {"sample_shape", id.sample_shape},
          {"class_counts", id.class_counts},
          {"fingerprint", id.fingerprint}};
}

std::string counts_text(const std::vector<int64_t>& counts) {
  std::string out;
  for (int64_t c : counts) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 8; ++i) out += (i ? ", " : "") + printable(names[i], 60, "''");
  if (names.size() > 8) out += " and " + std::to_string(names.size() - 8) + " more";
  return out;
}

}  // namespace

std::string data_identity_json(const data::Dataset& train, const data::Dataset* test) {
  return nlohmann::json{{"train", identity_json(train)}, {"test", test ? identity_json(*test) : nlohmann::json()}}
      .dump();
}

std::vector<std::string> data_changes(const std::map<std::string, std::string>& meta, const char* which,
                                      const data::Dataset& now) {
  const auto found = meta.find("data_identity");
  if (found == meta.end()) return {};  // a checkpoint from before identities were saved
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(found->second).at(which);
  } catch (const std::exception& e) {
    LS_FAIL("damaged data identity in the checkpoint's metadata: ", e.what());
  }
  if (saved.is_null()) return {};
  const nlohmann::json current = identity_json(now);
  std::vector<std::string> changes;
  auto compare = [&](const char* key, const char* what, auto text) {
    if (!saved.contains(key) || saved[key] == current[key]) return;
    changes.push_back(std::string(what) + " " + text(saved[key]) + " then, " + text(current[key]) + " now");
  };
  auto plain = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  compare("samples", "samples:", plain);
  compare("sample_shape", "sample shape:", plain);
  compare("class_counts", "samples per class:", [](const nlohmann::json& v) {
    try {
      return counts_text(v.get<std::vector<int64_t>>());
    } catch (const std::exception&) {
      return v.dump();
    }
  });
  if (changes.empty()) compare("fingerprint", "fingerprint (labels in order, three samples' pixels):", plain);
  return changes;
}

void check_same_classes(const std::vector<std::string>& saved, const std::vector<std::string>& now,
                        const std::string& data, const std::string& checkpoint) {
  if (saved == now) return;
  std::vector<std::string> missing, added;
  for (const std::string& name : saved)
    if (std::find(now.begin(), now.end(), name) == now.end()) missing.push_back(name);
  for (const std::string& name : now)
    if (std::find(saved.begin(), saved.end(), name) == saved.end()) added.push_back(name);
  std::string what;
  if (!missing.empty()) what += "; not in the data: " + names_text(missing);
  if (!added.empty()) what += "; not in the checkpoint: " + names_text(added);
  if (missing.empty() && added.empty()) what = "; the same names in another order";
  LS_FAIL("the classes of the data at ", data, " (", now.size(), ") are not those the checkpoint ", checkpoint,
          " was trained on (", saved.size(), ")", what,
          ": every label would mean another class. Rename the class folders back, or train a new model");
}

}  // namespace lockstep::app
