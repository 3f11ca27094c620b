#pragma once
// A `lockstep train` run's settings settled, and the values its stages read
// of them (run_plan.h). The one place that reads the run's control settings
// (its files, epochs, batch, learning rate, stopping rules, devices, loader
// threads and seed): every other part of a run takes the RunFiles and RunPlan
// made here.
#include "distributed/process_group.h"
#include "run_plan.h"
#include "settings.h"

namespace lockstep::app {

// The settings this run trains with: the checkpoint's when resuming (read
// into the result's resume_info), the machine's defaults, then the derived
// ones (data path, global batch, scaled lr), checked, with what a resumed
// run changes checked against its checkpoint. `world`: the processes (null:
// this one alone).
SettledRun settle_run(TrainSettings& s, const ProcessGroup* world);

// The files of settled settings: the checkpoint defaults to the one resumed,
// or lockstep.safetensors; the best epoch's and the curve's lie beside it.
RunFiles run_files(const TrainSettings& s);

}  // namespace lockstep::app
