#pragma once
// What a resumed `lockstep train --resume` may change of the run it
// continues: its settings, and the data it trains on.
#include <vector>

#include "data/dataset.h"
#include "run_plan.h"
#include "settings_metadata.h"
#include "training/checkpoint.h"

namespace lockstep::app {

// A resumed run continues the checkpoint's run: a setting that would make it
// another run (another seed, batch, precision...: `changes`, meaning_changes'
// of the settings against the checkpoint's) is refused unless --force, and
// said when forced. Mid-epoch, the batch and the samples cannot change at
// all: the position in the epoch would no longer mean anything.
void check_resume_changes(const std::vector<SettingChange>& changes, const RunFiles& files,
                          const CheckpointInfo& resume_info);

// A resumed run trains on its checkpoint's classes (unless --force); a
// change of the data since is told, and refused mid-epoch, whose remaining
// batches would be drawn from another order. `first`: whether this process
// tells of the change (the first of a run across processes).
void check_resumed_data(const RunFiles& files, const CheckpointInfo& info, const data::Dataset& train, bool first);

}  // namespace lockstep::app
