#pragma once
// The one table of `lockstep train`'s settings. Each setting is declared once
// (settings_table.cpp): its TrainSettings field, flag and help, its checkpoint
// metadata key, what a change of it means to a resumed run, whether the
// processes of a run must agree on it, its check, and what the start report
// says of it. Every consumer iterates the table: the flags (train_flags.cpp),
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

}  // namespace lockstep::app
