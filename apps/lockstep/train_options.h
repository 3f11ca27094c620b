#pragma once
// What a run of TrainSettings asks of the library: the model it builds, the
// replicas' options and the trainer's configuration.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "data/dataset.h"
#include "distributed/process_group.h"
#include "distributed/replica_manager.h"
#include "settings.h"
#include "train_data.h"
#include "training/checkpoint.h"
#include "training/trainer.h"

namespace lockstep::app {

// LOCKSTEP_COLLECTIVE_TIMEOUT (seconds): how long a replica waits at a
// collective before it declares another replica or process lost.
// Throws on a value that is not a positive number.
std::chrono::milliseconds collective_timeout();

// The model for this data; when resuming, the checkpoint's (a --model that
// names another one is refused).
std::string choose_model_spec(const TrainSettings& s, const CheckpointInfo& resume_info,
                              const data::Dataset& train_set);

// The replicas' seed, precision, memory format, batch-norm sync, gradient
// buckets and CUDA graphs; `world`: the processes (null: this one alone).
ReplicaOptions replica_options(const TrainSettings& s, const std::shared_ptr<ProcessGroup>& world);

// Epochs, schedule, optimizer, checkpoint (with the settings and the data's
// identity as its metadata) and time limit; `normalization`: the training
// loader's, saved for eval and predict; `head_offset`: where the
// classifier's parameters start (ReplicaModels::head_offset), the end of the
// backbone whose learning rate is scaled.
TrainerConfig trainer_config(const TrainSettings& s, const TrainData& d, const data::Normalization& normalization,
                             int64_t head_offset);

}  // namespace lockstep::app
