#pragma once
// Checkpoints as safetensors files (loadable by PyTorch's safetensors):
// parameters, running statistics and momentum as named f32 tensors
// ("<node>.<name>", "momentum.<node>.<name>"), and in "__metadata__" the model
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
// nothing is changed when anything does not match.
void load_into(Model& model, const LoadedCheckpoint& checkpoint, const std::string& path);

}  // namespace lockstep
