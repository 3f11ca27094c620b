#pragma once
// lockstep train under an MPI launcher: before the first collective, the
// processes compare what makes the run (the data's identity, not its path;
// the model; batch, epochs, schedule, precision, seed; where a resume
// starts). Where any differs, all refuse together: the first process names
// each setting that differs and which processes hold which value; the others
// stay silent (ReportedByFirstProcess).
#include <string>
#include <vector>

#include "data/dataset.h"
#include "distributed/process_agreement.h"
#include "settings.h"

namespace lockstep::app {

// The settings the table (settings_table.h) says every process must hold
// alike, by name and value.
std::vector<NamedSetting> setting_agreement(const TrainSettings& s);

// What must be the same on every process of a run of `s`: those settings,
// `format` and the data sets as opened (test may be null), `spec` the model
// that trains, `resume_position` where a resumed run goes on ("" for a new
// run).
std::vector<NamedSetting> run_settings(const TrainSettings& s, const std::string& spec, const std::string& format,
                                       const data::Dataset& train, const data::Dataset* test,
                                       const std::string& resume_position);

// Throws Error (the first process) or ReportedByFirstProcess (the others)
// when the processes' settings differ.
void check_processes_agree(ProcessGroup& world, const std::vector<NamedSetting>& settings);

}  // namespace lockstep::app
