#include "settings_metadata.h"

#include <exception>
#include <utility>

#include "base/error.h"
#include "settings_table.h"

namespace lockstep::app {

std::map<std::string, std::string> to_metadata(const TrainSettings& s) {
  std::map<std::string, std::string> meta;
  for (const SettingEntry& e : train_setting_table())
    if (!e.key.empty()) meta[e.key] = e.text(s);
  return meta;
}

std::vector<SettingChange> meaning_changes(const TrainSettings& s, const std::map<std::string, std::string>& meta) {
  std::vector<SettingChange> changes;
  for (const SettingEntry& e : train_setting_table()) {
    if (e.key.empty() || e.on_resume == OnResume::may_change) continue;
    const auto saved = meta.find(e.key);
    const std::string now = e.text(s);
    if (saved != meta.end() && now != saved->second)
      changes.push_back({e.flag, e.key, saved->second, now, e.on_resume == OnResume::epoch_shape, e.is_switch,
                         e.on_resume == OnResume::fixed});
  }
  return changes;
}

GivenFlags from_metadata(TrainSettings& s, const std::map<std::string, std::string>& meta) {
  GivenFlags settled = s.given;
  std::vector<std::pair<const SettingEntry*, std::string>> in_own_words;
  for (const SettingEntry& e : train_setting_table()) {
    const auto it = e.key.empty() ? meta.end() : meta.find(e.key);
    if (it == meta.end() || s.given.contains(e.flag)) continue;
    settled.add(e.flag);
    if (e.reads_in_own_words) {
      in_own_words.emplace_back(&e, it->second);
      continue;
    }
    try {
      e.read(s, it->second);
    } catch (const std::exception&) {  // std::stoll's own message is only "stoll"
      LS_FAIL("the checkpoint's setting '", e.key, "' (", e.flag, ") is \"", it->second, "\", not a valid value");
    }
  }
  // Read after the others, so that their errors come first as they always did.
  for (const auto& [e, text] : in_own_words) e->read(s, text);
  return settled;
}

}  // namespace lockstep::app
