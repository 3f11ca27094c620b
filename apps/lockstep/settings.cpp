#include "settings.h"

#include <exception>
#include <filesystem>
#include <utility>

#include "base/error.h"
#include "runtime/memory_format_option.h"
#include "settings_table.h"

namespace lockstep::app {

void apply_defaults(TrainSettings& s, Device device, const GivenFlags& settled) {
  auto set = [&](const char* flag, auto& field, auto value) {
    if (!settled.contains(flag)) field = value;
  };
  if (!settled.contains("--memory-format"))  // the library's rule, for what this run trains with
    s.memory_format = default_memory_format(s.precision, device);
  if (device.is_cuda()) {
    set("--model", s.model, std::string("resnet18"));
    set("--epochs", s.epochs, int64_t(15));
    set("--batch", s.batch, int64_t(512));
    set("--lr", s.lr, 0.2f);
    set("--warmup-epochs", s.warmup_epochs, 1.0);
    set("--augment", s.augment, std::string("crop-flip"));
  } else {
    // small-cnn (batch norm, 'same' convolutions, pooling before BN): about
    // half simple-cnn's step time and past 90% on Fashion-MNIST by its third
    // epoch; 5 cosine epochs end near 91.5% in under 4 minutes on 2 cores.
    set("--model", s.model, std::string("small-cnn"));
    set("--epochs", s.epochs, int64_t(5));
    set("--batch", s.batch, int64_t(64));
    set("--lr", s.lr, 0.05f);
    set("--augment", s.augment, std::string("none"));
  }
}

std::string curve_path(const TrainSettings& s) {
  if (!s.plot.empty()) return s.plot;
  return std::filesystem::path(s.checkpoint).replace_extension(".png").string();
}

std::string best_checkpoint_path(const TrainSettings& s) {
  const std::string suffix = ".safetensors";
  const std::string& c = s.checkpoint;
  const bool named = c.size() > suffix.size() && c.compare(c.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (named ? c.substr(0, c.size() - suffix.size()) : c) + ".best" + suffix;
}

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
      changes.push_back({e.flag, e.key, saved->second, now, e.on_resume == OnResume::epoch_shape, e.is_switch});
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
