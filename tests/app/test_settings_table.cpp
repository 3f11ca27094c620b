// The settings table of `lockstep train` (apps/lockstep/settings_table.h)
// against everything that reads it. For every entry, a value given by its
// flag is saved to a checkpoint's metadata and read back, compared across
// processes, and checked on resume, each exactly as the entry declares: a
// setting added to the table is tested here without a line more. What
// earlier checkpoints and runs rely on is pinned: the metadata keys, the
// changes a resumed run refuses, the names the processes compare.
#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "apps/lockstep/resume_checks.h"
#include "apps/lockstep/settled_run.h"
#include "apps/lockstep/settings_metadata.h"
#include "apps/lockstep/settings_table.h"
#include "apps/lockstep/train_flags.h"
#include "apps/lockstep/world_agreement.h"
#include "base/error.h"

namespace {

using namespace lockstep::app;

// The settings `lockstep train ARGS` starts from, before defaults; throws
// CLI::ParseError on an argument CLI11 refuses.
TrainSettings parse(std::vector<std::string> args) {
  CLI::App command;
  TrainFlags flags(command);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  command.parse(args);
  return flags.settings();
}

// A file whose contents --init's agreement compares; also a value any path
// setting takes.
// A file for the flags that name one (--init): one per test process, removed
// when the process ends, so the run leaves nothing in the temporary folder.
class TestFile {
public:
  TestFile()
      : path_((std::filesystem::temp_directory_path() /
               ("lockstep-settings-table-test-" + std::to_string(::getpid()) + ".bin"))
                  .string()) {
    std::ofstream(path_) << "weights";
  }
  ~TestFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

std::string existing_file() {
  static const TestFile file;
  return file.path();
}

// The settings with `entry` changed from its default through its flag: the
// first of a few texts that the flag takes and that change the setting
// (every kind of value has one among them).
std::optional<TrainSettings> changed_by_flag(const SettingEntry& entry) {
  const TrainSettings defaults = parse({});
  if (entry.is_switch) return parse({entry.flag});
  for (const std::string& text :
       {existing_file(), std::string("0.25"), std::string("1"), std::string("7"), std::string("step"),
        std::string("fp32"), std::string("nhwc"), std::string("crop-flip"), std::string("imagenet"), std::string("off"),
        std::string("cpu"), std::string("adamw"), std::string("0.8,0.99")}) {
    try {
      TrainSettings s = parse({entry.flag, text});
      if (entry.text(s) != entry.text(defaults)) return s;
    } catch (const CLI::ParseError&) {
    } catch (const lockstep::Error&) {
    }
  }
  return std::nullopt;
}

// The names whose values differ between two lists of the same names.
std::vector<std::string> differing(const std::vector<lockstep::NamedSetting>& a,
                                   const std::vector<lockstep::NamedSetting>& b) {
  REQUIRE(a.size() == b.size());
  std::vector<std::string> names;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].name == b[i].name);
    if (a[i].value != b[i].value) names.push_back(a[i].name);
  }
  return names;
}

std::vector<std::string> differing_keys(const std::map<std::string, std::string>& a,
                                        const std::map<std::string, std::string>& b) {
  REQUIRE(a.size() == b.size());
  std::vector<std::string> keys;
  for (const auto& [key, value] : a)
    if (b.at(key) != value) keys.push_back(key);
  return keys;
}

void check_metadata_round_trip(const SettingEntry& e, const TrainSettings& defaults, const TrainSettings& changed) {
  const std::map<std::string, std::string> saved = to_metadata(changed);
  if (e.key.empty()) {
    CHECK(differing_keys(saved, to_metadata(defaults)).empty());
    return;
  }
  CHECK(differing_keys(saved, to_metadata(defaults)) == std::vector<std::string>{e.key});
  CHECK(saved.at(e.key) == e.text(changed));
  TrainSettings resumed = parse({});
  const GivenFlags settled = from_metadata(resumed, saved);
  CHECK(e.text(resumed) == e.text(changed));
  CHECK(settled.contains(e.flag));
  // A flag given on the resuming command line wins over the checkpoint's.
  TrainSettings given = parse({});
  given.given.add(e.flag);
  from_metadata(given, saved);
  CHECK(e.text(given) == e.text(defaults));
}

void check_agreement(const SettingEntry& e, const TrainSettings& defaults, const TrainSettings& changed) {
  const std::vector<std::string> names = differing(setting_agreement(defaults), setting_agreement(changed));
  if (e.agreed)
    CHECK(names == std::vector<std::string>{e.agreement_label()});
  else
    CHECK(names.empty());
}

// The resume check as a settled run makes it: the changes against the
// checkpoint, and the run's files (--resume, --force).
void check_resume_changes(const TrainSettings& s, const lockstep::CheckpointInfo& checkpoint) {
  lockstep::app::check_resume_changes(meaning_changes(s, checkpoint.extra), run_files(s), checkpoint);
}

void check_resume(const SettingEntry& e, const TrainSettings& defaults, TrainSettings changed) {
  lockstep::CheckpointInfo checkpoint;
  checkpoint.extra = to_metadata(defaults);
  changed.resume = "earlier.safetensors";
  const bool another_run = !e.key.empty() && e.on_resume != OnResume::may_change;
  const std::vector<SettingChange> changes = meaning_changes(changed, checkpoint.extra);
  if (!another_run) {
    CHECK(changes.empty());
    CHECK_NOTHROW(check_resume_changes(changed, checkpoint));
    return;
  }
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].flag == e.flag);
  CHECK(changes[0].epoch_shape == (e.on_resume == OnResume::epoch_shape));
  CHECK_THROWS_AS(check_resume_changes(changed, checkpoint), lockstep::Error);
  changed.force = true;
  if (e.on_resume == OnResume::fixed) {  // not even forced
    CHECK_THROWS_WITH(check_resume_changes(changed, checkpoint), Catch::Contains("not even with --force"));
    return;
  }
  CHECK_NOTHROW(check_resume_changes(changed, checkpoint));
  // Mid-epoch even --force cannot change the shape of the epoch.
  checkpoint.batch_in_epoch = 3;
  if (e.on_resume == OnResume::epoch_shape)
    CHECK_THROWS_AS(check_resume_changes(changed, checkpoint), lockstep::Error);
  else
    CHECK_NOTHROW(check_resume_changes(changed, checkpoint));
}

}  // namespace

TEST_CASE("every setting given by its flag is saved, read back, compared and checked on resume as declared",
          "[settings_table]") {
  const TrainSettings defaults = parse({});
  for (const SettingEntry& e : train_setting_table()) {
    INFO(e.flag);
    const std::optional<TrainSettings> changed = changed_by_flag(e);
    REQUIRE(changed.has_value());
    CHECK(changed->given.contains(e.flag));
    check_metadata_round_trip(e, defaults, *changed);
    check_agreement(e, defaults, *changed);
    check_resume(e, defaults, *changed);
  }
}

TEST_CASE("the table declares each flag and each metadata key once", "[settings_table]") {
  std::set<std::string> flags, keys;
  for (const SettingEntry& e : train_setting_table()) {
    INFO(e.flag);
    CHECK(flags.insert(e.flag).second);
    if (!e.key.empty()) CHECK(keys.insert(e.key).second);
    CHECK(e.text);
    CHECK(e.read);
    CHECK(e.bind);
  }
}

// Checkpoints written before the table resume with these keys, and a run
// across processes compares what it compared; a key dropped here leaves an
// old checkpoint's setting behind without a word.
TEST_CASE("the metadata keys, the changes refused on resume and the compared settings stay those of before",
          "[settings_table]") {
  std::set<std::string> keys;
  for (const auto& [key, value] : to_metadata(parse({}))) keys.insert(key);
  CHECK(keys == std::set<std::string>{"augment",       "backbone_lr_scale", "batch",          "betas",
                                      "clip_grad_norm", "eps",              "optimizer",      "ema",
                                      "data",          "drop_last",         "dropout",        "early_stop",
                                      "epochs",        "freeze_backbone",   "input",          "keep_best",
                                      "label_smoothing", "limit",
                                      "mixup",         "cutmix",            "mixup_prob",     "mixup_switch_prob",
                                      "lr",            "memory_format",     "momentum",       "nesterov",
                                      "normalize",     "precision",         "schedule",       "seed",
                                      "sync_bn",       "test_data",         "test_fraction",  "test_limit",
                                      "warmup_epochs", "weight_decay"});
  std::set<std::string> another_run, epoch_shape, fixed;
  for (const SettingEntry& e : train_setting_table()) {
    if (e.key.empty() || e.on_resume == OnResume::may_change) continue;
    if (e.on_resume == OnResume::fixed) {
      fixed.insert(e.flag);
      continue;
    }
    another_run.insert(e.flag);
    if (e.on_resume == OnResume::epoch_shape) epoch_shape.insert(e.flag);
  }
  CHECK(fixed == std::set<std::string>{"--optimizer"});
  CHECK(another_run == std::set<std::string>{"--seed", "--batch", "--limit", "--drop-last", "--input", "--augment",
                                             "--normalize", "--precision", "--no-dropout", "--sync-bn",
                                             "--test-fraction"});
  CHECK(epoch_shape == std::set<std::string>{"--batch", "--limit", "--drop-last"});
  std::set<std::string> compared;
  for (const lockstep::NamedSetting& setting : setting_agreement(parse({}))) compared.insert(setting.name);
  CHECK(compared == std::set<std::string>{"--epochs",
                                          "--seed",
                                          "--batch (the global batch)",
                                          "--lr (as scaled)",
                                          "--optimizer",
                                          "--momentum",
                                          "--nesterov",
                                          "--betas",
                                          "--eps",
                                          "--weight-decay",
                                          "--clip-grad-norm",
                                          "--label-smoothing",
                                          "--ema",
                                          "--mixup",
                                          "--cutmix",
                                          "--mixup-prob",
                                          "--mixup-switch-prob",
                                          "--freeze-backbone",
                                          "--backbone-lr-scale",
                                          "--schedule",
                                          "--warmup-epochs",
                                          "--augment",
                                          "--normalize",
                                          "--input",
                                          "--limit",
                                          "--test-limit",
                                          "--drop-last",
                                          "--test-fraction",
                                          "--sync-bn",
                                          "--no-dropout (dropout on)",
                                          "--precision",
                                          "--memory-format",
                                          "--time-limit",
                                          "--keep-best",
                                          "--early-stop",
                                          "--bucket-mb",
                                          "--first-bucket-mb",
                                          "--init (the pretrained weights' contents)"});
}
