#pragma once
// What a run of TrainSettings asks of the library: the model it builds, the
// replicas' options (with what --cuda-graphs says of the devices) and the
// trainer's configuration.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "distributed/process_group.h"
#include "distributed/replica_manager.h"
#include "replica_models.h"
#include "run_plan.h"
#include "settings.h"
#include "train_data.h"
#include "training/checkpoint.h"
#include "training/trainer.h"

namespace lockstep::app {

// LOCKSTEP_COLLECTIVE_TIMEOUT (seconds): how long a replica waits at a
// collective before it declares another replica or process lost.
// Throws on a value that is not a positive number.
std::chrono::milliseconds collective_timeout();

// The model for this data; when resuming (`files`), the checkpoint's (a
// --model that names another one is refused).
std::string choose_model_spec(const TrainSettings& s, const RunFiles& files, const CheckpointInfo& resume_info,
                              const data::Dataset& train_set);

// How the replicas' models start: the run's seed, a frozen backbone, --init's weights.
ModelStart model_start(const TrainSettings& s, const SettledRun& run);

// The replicas' seed (the `plan`'s), precision, memory format, batch-norm
// sync, gradient buckets and CUDA graphs; `world`: the processes (null: this
// one alone).
ReplicaOptions replica_options(const TrainSettings& s, const RunPlan& plan, const std::shared_ptr<ProcessGroup>& world);

// --cuda-graphs on, refused on the CPU (the replicas' `devices`; `devices_flag`:
// --devices as given, which the message repeats).
void check_cuda_graphs(const TrainSettings& s, const std::vector<Device>& devices, const std::string& devices_flag);

// --cuda-graphs on where the replicas built run eagerly all the same: a
// notice of why (the first process says it).
void notice_eager_steps(const TrainSettings& s, const ReplicaManager& replicas);

// Schedule, optimizer and the checkpoint's metadata (the settings and the
// data's identity), with the run's control from `run` (set_run_control:
// epochs, learning rate, checkpoint paths, time limit, early stop);
// `normalization`: the training loader's, saved for eval and predict;
// `head_offset`: where the classifier's parameters start
// (ReplicaModels::head_offset), the end of the backbone whose learning rate
// is scaled.
TrainerConfig trainer_config(const TrainSettings& s, const SettledRun& run, const TrainData& d,
                             const data::Normalization& normalization, int64_t head_offset);

}  // namespace lockstep::app
