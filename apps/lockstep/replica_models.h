#pragma once
// The models the replicas of `lockstep train` train, as the replica manager
// builds them (one per replica, on the replica's thread): from the model
// spec, the backbone frozen with --freeze-backbone, and started from --init's
// pretrained weights, opened once, checked, and read into every replica.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "distributed/replica_manager.h"
#include "training/pretrained.h"

namespace lockstep::app {

// How every replica's model starts (train_options.h's model_start makes it
// from the settings).
struct ModelStart {
  uint64_t seed = 1;             // of the initial weights
  bool freeze_backbone = false;  // --freeze-backbone
  std::string init_path;         // --init's pretrained weights; "" when none
};

class ReplicaModels {
public:
  // Reads --init's weights (when given) and checks that `spec` can take
  // them; `class_names`: the training set's, matched with the file's.
  ReplicaModels(const ModelStart& start, std::string spec, std::vector<std::string> class_names);

  // For ReplicaManager: builds a replica's model. This object outlives the replicas.
  ModelFactory factory();

  // After the replicas are built: whether --init loaded weights, and what it loaded.
  bool initialised() const { return pretrained_.has_value(); }
  const PretrainedLoad& init_result() const { return init_result_; }
  // Where the classifier's parameters start: the same in every replica.
  int64_t head_offset() const { return head_offset_; }

private:
  std::string spec_;
  uint64_t seed_;
  bool freeze_backbone_;
  std::vector<std::string> class_names_;
  std::optional<PretrainedWeights> pretrained_;
  std::mutex load_mutex_;  // held by the replica loading --init's weights
  std::mutex mutex_;       // the replicas' threads write the two below
  PretrainedLoad init_result_;
  int64_t head_offset_ = 0;
};

}  // namespace lockstep::app
