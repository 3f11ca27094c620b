#include "settings.h"

#include <filesystem>

#include <exception>
#include <sstream>

#include "base/error.h"
#include "runtime/memory_format_option.h"
#include "runtime/precision.h"

namespace lockstep::app {

namespace {
// Enough digits to read back the same value (std::to_string keeps only 6 decimals).
std::string exact(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}
}  // namespace

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

std::map<std::string, std::string> to_metadata(const TrainSettings& s) {
  return {{"data", s.data},
          {"test_data", s.test_data},
          {"epochs", std::to_string(s.epochs)},
          {"seed", std::to_string(s.seed)},
          {"batch", std::to_string(s.batch)},
          {"lr", exact(s.lr)},
          {"momentum", exact(s.momentum)},
          {"nesterov", s.nesterov ? "1" : "0"},
          {"weight_decay", exact(s.weight_decay)},
          {"clip_grad_norm", exact(s.clip_grad_norm)},
          {"label_smoothing", exact(s.label_smoothing)},
          {"freeze_backbone", s.freeze_backbone ? "1" : "0"},
          {"backbone_lr_scale", exact(s.backbone_lr_scale)},
          {"schedule", schedule_name(s.schedule)},
          {"warmup_epochs", exact(s.warmup_epochs)},
          {"augment", s.augment},
          {"normalize", s.normalize},
          {"input", s.input},
          {"limit", std::to_string(s.limit)},
          {"test_limit", std::to_string(s.test_limit)},
          {"drop_last", s.drop_last ? "1" : "0"},
          {"test_fraction", exact(s.test_fraction)},
          {"sync_bn", s.sync_bn ? "1" : "0"},
          {"dropout", s.dropout ? "1" : "0"},
          {"precision", precision_name(s.precision)},
          {"memory_format", memory_format_name(s.memory_format)}};
}

std::vector<SettingChange> meaning_changes(const TrainSettings& s, const std::map<std::string, std::string>& meta) {
  // What the run trains on and how its steps are drawn: changed, the resumed
  // run is no longer the one it continues. (The learning rate, its schedule,
  // the epoch count and the test set may change: that is what resuming is
  // for.)
  static const std::pair<const char*, const char*> keys[] = {
      {"seed", "--seed"},           {"batch", "--batch"},
      {"limit", "--limit"},         {"drop_last", "--drop-last"},
      {"input", "--input"},         {"augment", "--augment"},
      {"normalize", "--normalize"},
      {"precision", "--precision"}, {"dropout", "--no-dropout"},
      {"sync_bn", "--sync-bn"},     {"test_fraction", "--test-fraction"}};
  const std::map<std::string, std::string> now = to_metadata(s);
  std::vector<SettingChange> changes;
  for (const auto& [key, flag] : keys) {
    const auto saved = meta.find(key);
    if (saved != meta.end() && now.at(key) != saved->second) changes.push_back({flag, key, saved->second, now.at(key)});
  }
  return changes;
}

GivenFlags from_metadata(TrainSettings& s, const std::map<std::string, std::string>& meta) {
  GivenFlags settled = s.given;
  auto take = [&](const char* key, const char* flag, auto apply) {
    auto it = meta.find(key);
    if (it == meta.end() || s.given.contains(flag)) return;
    try {
      apply(it->second);
    } catch (const std::exception&) {  // std::stoll's own message is only "stoll"
      LS_FAIL("the checkpoint's setting '", key, "' (", flag, ") is \"", it->second, "\", not a valid value");
    }
    settled.add(flag);
  };
  take("data", "--data", [&](const std::string& v) { s.data = v; });
  take("test_data", "--test-data", [&](const std::string& v) { s.test_data = v; });
  take("epochs", "--epochs", [&](const std::string& v) { s.epochs = std::stoll(v); });
  take("seed", "--seed", [&](const std::string& v) { s.seed = std::stoull(v); });
  take("batch", "--batch", [&](const std::string& v) { s.batch = std::stoll(v); });
  take("lr", "--lr", [&](const std::string& v) { s.lr = std::stof(v); });
  take("momentum", "--momentum", [&](const std::string& v) { s.momentum = std::stof(v); });
  take("nesterov", "--nesterov", [&](const std::string& v) { s.nesterov = v == "1"; });
  take("weight_decay", "--weight-decay", [&](const std::string& v) { s.weight_decay = std::stof(v); });
  take("clip_grad_norm", "--clip-grad-norm", [&](const std::string& v) { s.clip_grad_norm = std::stof(v); });
  take("label_smoothing", "--label-smoothing", [&](const std::string& v) { s.label_smoothing = std::stof(v); });
  take("freeze_backbone", "--freeze-backbone", [&](const std::string& v) { s.freeze_backbone = v == "1"; });
  take("backbone_lr_scale", "--backbone-lr-scale", [&](const std::string& v) { s.backbone_lr_scale = std::stof(v); });
  // A schedule this build does not know is refused in parse_schedule's own
  // words, which list the known ones: parsed after take(), which would
  // reword them.
  std::optional<std::string> schedule;
  take("schedule", "--schedule", [&](const std::string& v) { schedule = v; });
  take("warmup_epochs", "--warmup-epochs", [&](const std::string& v) { s.warmup_epochs = std::stod(v); });
  take("augment", "--augment", [&](const std::string& v) { s.augment = v; });
  take("normalize", "--normalize", [&](const std::string& v) { s.normalize = v; });
  take("input", "--input", [&](const std::string& v) { s.input = v; });
  take("limit", "--limit", [&](const std::string& v) { s.limit = std::stoll(v); });
  take("test_limit", "--test-limit", [&](const std::string& v) { s.test_limit = std::stoll(v); });
  take("drop_last", "--drop-last", [&](const std::string& v) { s.drop_last = v == "1"; });
  take("dropout", "--no-dropout", [&](const std::string& v) { s.dropout = v == "1"; });
  take("test_fraction", "--test-fraction", [&](const std::string& v) { s.test_fraction = std::stod(v); });
  // No output path is taken from a checkpoint (the checksum does not cover
  // its metadata, and an edited one must not choose what a run overwrites):
  // a resumed run draws its curve at --plot or beside its checkpoint. Older
  // checkpoints' "plot" entry is ignored.
  take("sync_bn", "--sync-bn", [&](const std::string& v) { s.sync_bn = v == "1"; });
  // A precision or memory format this build does not know is the checkpoint's error.
  take("precision", "--precision", [&](const std::string& v) { s.precision = parse_precision(v, "--precision"); });
  take("memory_format", "--memory-format",
       [&](const std::string& v) { s.memory_format = parse_memory_format(v, "--memory-format"); });
  if (schedule) s.schedule = parse_schedule(*schedule);
  return settled;
}

}  // namespace lockstep::app
