#pragma once
// The lines `lockstep train` prints before its first step: what trains on
// what, where a resumed run goes on from, and what the run chose on its own
// (image caching, normalisation, the backbone's learning, the classifier
// --init replaced).
#include <cstdint>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "run_plan.h"
#include "settings.h"
#include "train_data.h"
#include "training/checkpoint.h"
#include "training/pretrained.h"
#include "training/trainer.h"

namespace lockstep::app {

// The lines before the first step: what trains on what (`run`'s files,
// plan and devices), and where a resumed run goes on from.
void print_start(const TrainSettings& s, const SettledRun& run, const std::string& spec, const TrainData& d,
                 const ProcessGroup* world, const Trainer& trainer);

// The decoded-image cache (image folders), the normalisation when it was
// chosen for the pretrained weights (`normalize_note`, resolve_normalize's),
// the loader threads when not given (`plan`), and a frozen or slower backbone.
void print_data_and_model_notes(const TrainSettings& s, const RunPlan& plan, const TrainData& d,
                                const std::string& normalize_note);

// What --init (`files`) loaded into a model of the training set's classes,
// the classifier it re-initialised, and the input the file's model was
// trained on (an export says), with a notice when this run's (`used`, and
// d.input_size) is another.
void print_init(const RunFiles& files, const TrainData& d, const PretrainedLoad& init_result,
                const data::Normalization& used);

}  // namespace lockstep::app
