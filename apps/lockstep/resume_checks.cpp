#include "resume_checks.h"

#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "data_check.h"

namespace lockstep::app {

void check_resume_changes(const std::vector<SettingChange>& changes, const RunFiles& files,
                          const CheckpointInfo& resume_info) {
  for (const SettingChange& c : changes) {
    LS_CHECK(!c.fixed, "--resume ", files.resume_path, ": the checkpoint was trained with ", c.flag, " ", c.saved,
             " and holds that optimizer's state, which ", c.flag, " ", c.given,
             " cannot take up (not even with --force): resume without ", c.flag,
             ", or start a new run from its weights (lockstep export, then --init)");
    LS_CHECK(!(c.epoch_shape && resume_info.batch_in_epoch > 0), "--resume ", files.resume_path,
             " stopped after batch ", resume_info.batch_in_epoch, " of an epoch; ", c.flag,
             " cannot change mid-epoch (the checkpoint's ", c.saved, ", given ", c.given,
             "): resume without it, or from a checkpoint written at an epoch's end");
    // A flag without a value reads as the setting it switches: "--FLAG (KEY 1)".
    const std::string given = c.is_switch ? c.flag + " (" + c.key + " " + c.given + ")" : c.flag + " " + c.given;
    LS_CHECK(files.forced, "--resume ", files.resume_path, ": ", given, " differs from the checkpoint's ", c.saved,
             ", which would make the resumed run another run; leave it out to continue, or give --force to change it");
    std::printf("resume: %s replaces the checkpoint's %s (--force)\n", given.c_str(), c.saved.c_str());
  }
}

void check_resumed_data(const RunFiles& files, const CheckpointInfo& info, const data::Dataset& train, bool first) {
  if (!files.forced) check_same_classes(info.class_names, train.class_names(), files.data_path, files.resume_path);
  const std::vector<std::string> changes = data_changes(info.extra, "train", train);
  if (changes.empty()) return;
  std::string text;
  for (const std::string& c : changes) text += (text.empty() ? "" : "; ") + c;
  LS_CHECK(info.batch_in_epoch == 0, "--resume ", files.resume_path, " stopped after batch ", info.batch_in_epoch,
           " of an epoch, and the training data at ", files.data_path, " changed since (", text,
           "): the epoch goes on only on the same data; restore it, or resume from a checkpoint written at an "
           "epoch's end");
  if (first)
    std::printf("notice: the training data at %s changed since the checkpoint: %s\n", files.data_path.c_str(),
                text.c_str());
}

}  // namespace lockstep::app
