#pragma once
// The one table of `lockstep train`'s settings. Each setting is declared once
// (settings_table.cpp): its TrainSettings field, flag and help, its checkpoint
// metadata key, what a change of it means to a resumed run, whether the
// processes of a run must agree on it, its check, its default for the
// machine, and what the start report says of it. Every consumer iterates the
// table: the flags (train_flags.cpp), the defaults (apply_defaults, below),
// the metadata to and from a checkpoint and the resume check (settings_metadata.cpp),
// the processes' agreement (world_agreement.cpp), the checks
// (settings_checks.cpp) and the start report's notes (start_report.cpp); so a
// setting added to the table is parsed, saved, read back, compared and
// checked, and one left out of it has no flag at all.
#include <vector>

#include "setting_entry.h"

namespace lockstep::app {

// In the order `lockstep train --help` lists the flags.
const std::vector<SettingEntry>& train_setting_table();

// Fills the settings the user did not give with the defaults for the machine
// the first replica runs on (`device`), each as its entry declares
// (SettingEntry::machine_default): on a GPU resnet18 with a cosine schedule;
// on the CPU small-cnn, sized so that the no-argument run finishes within
// minutes on two cores. The memory format follows the settled precision, so
// the checkpoint and the check at the end of settling see the format that
// trains.
// `settled`: the flags given or taken from a checkpoint (from_metadata).
void apply_defaults(TrainSettings& s, Device device, const GivenFlags& settled);

}  // namespace lockstep::app
