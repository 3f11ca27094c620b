#pragma once
// Checkpoints as safetensors files (loadable by PyTorch's safetensors):
// parameters, running statistics and the optimizer's state as named f32
// tensors ("<node>.<name>"; SGD's "momentum.<node>.<name>", AdamW's
// "exp_avg.<node>.<name>" and "exp_avg_sq.<node>.<name>", its step t being
// the metadata's step + 1 at the next update; with --ema the moving average
// of every weight and statistic, "ema.<node>.<name>"), and in "__metadata__" the model
// spec, class names, epoch, step, seed, the schedule position and a CRC-32 of
// the tensor data, so a damaged file is refused instead of loaded. Written to
// a temporary file beside the target, flushed and renamed: a crash never
// leaves a broken checkpoint in place of a good one.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/model.h"

namespace lockstep {

struct CheckpointInfo {
  std::string model_spec;                 // Model::spec(): what builds the same model
  std::vector<std::string> class_names;
  int64_t epoch = 0;                      // epochs completed
  int64_t step = 0;                       // optimizer steps taken
  int64_t batch_in_epoch = 0;             // batches of the current epoch already taken (mid-epoch stop)
  uint64_t seed = 0;
  std::map<std::string, std::string> extra;  // anything else the caller wants back (settings)
};

// One of a model's tensors under its name ("<node>.<name>").
struct StateTensor {
  std::string name;
  Shape shape;
  Tensor tensor;
};
// The parameters, then the running statistics: what a PyTorch state dict
// holds, and a checkpoint without the momentum.
std::vector<StateTensor> model_state_tensors(Model& model);

// Writes `model`'s tensors and `info` to `path` atomically.
void save_checkpoint(const std::string& path, Model& model, const CheckpointInfo& info);

// A checkpoint read into host memory, checked for integrity.
struct LoadedCheckpoint {
  CheckpointInfo info;
  std::map<std::string, std::pair<Shape, std::vector<float>>> tensors;
};

// Reads and verifies a checkpoint (format, bounds, checksum); throws an Error
// that names the file and what is wrong.
LoadedCheckpoint read_checkpoint(const std::string& path);
// True when safetensors metadata is a lockstep checkpoint's (its "format" tag).
bool is_checkpoint_metadata(const std::map<std::string, std::string>& metadata);
// Reads only the metadata (to rebuild the model before loading it).
CheckpointInfo read_checkpoint_info(const std::string& path);

// Copies the tensors into `model`, checking every name and shape first;
// nothing is changed when anything does not match. The optimizer's state
// must be the one the model's arenas keep (SGD's, or AdamW's after
// add_adamw_state); without `with_optimizer_state` (eval, predict) it is
// neither needed nor read. A model with a moving average (--ema) takes the
// checkpoint's; one that holds none leaves the model's untouched.
void load_into(Model& model, const LoadedCheckpoint& checkpoint, const std::string& path,
               bool with_optimizer_state = true);
// A tensor of the optimizer's state (the moving average's included), by its
// checkpoint name.
bool is_optimizer_state(const std::string& name);

// --ema: whether the checkpoint holds the moving average of the weights and
// statistics ("ema.<name>").
bool has_ema(const LoadedCheckpoint& checkpoint);
// The checkpoint without its moving average.
LoadedCheckpoint without_ema(LoadedCheckpoint checkpoint);
// The checkpoint with its moving average in place of the weights and
// statistics, under their names, and no "ema." tensors left: what eval,
// predict and export read. An Error naming `path` when a tensor has no average.
LoadedCheckpoint with_ema_weights(LoadedCheckpoint checkpoint, const std::string& path);

}  // namespace lockstep
