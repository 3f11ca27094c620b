#pragma once
// Pretrained weights in and out of the torchvision-exact models (the tv-*
// models of layers/models.h, whose node names are torchvision's module
// names): state dicts in safetensors form, named as torchvision's or timm's
// models name them.
//   torchvision  conv1.weight, bn1.running_mean, layer1.0.downsample.0.weight,
//                fc.weight; VGG features.N.*, classifier.0/3/6.*
//   timm         the same for the ResNets; VGG classifier.0 and .3 as the
//                convolutions pre_logits.fc1 (4096x512x7x7) and pre_logits.fc2
//                (4096x4096x1x1), classifier.6 as head.fc. timm's VGG equals
//                torchvision's (and so ours) for inputs up to 224x224; above, timm
//                slides the 7x7 convolution where torchvision pools to 7x7 first.
// Loading reads F32, F16 and BF16 tensors; num_batches_tracked may be there
// or not and is ignored. A PyTorch pickle (zip or bare, known by its first
// bytes, whatever the file's name) is refused unread, with the two lines of
// Python that convert it; so is a lockstep training checkpoint (export it
// first), and weights that are not finite or variances below 0
// (training/state_values.h), naming the file and the tensor.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "training/checkpoint.h"
#include "training/safetensors.h"

namespace lockstep {

enum class StateDictNames { torchvision, timm };

// What a model's input was: its size and the normalisation of its pixels (in
// [0, 1]): (x - mean) / std per channel. Exports carry it in their metadata
// ("input_size" "3x224x224", "input_mean" and "input_std" JSON arrays; empty
// arrays when the pixels were used as they are).
struct InputPreprocessing {
  std::string size;
  std::vector<float> mean, std;
};
// "torchvision" or "timm"; throws an Error naming `what` otherwise.
StateDictNames parse_state_dict_names(const std::string& text, const std::string& what);

struct PretrainedLoad {
  StateDictNames names = StateDictNames::torchvision;  // as found in the file
  int64_t tensors = 0;             // tensors copied into the model
  bool head_reinitialised = false;  // the file's classifier has another class count
  std::string head;                // the classifier's name in the file ("fc", "classifier.6", "head.fc")
  int64_t file_classes = 0;        // the file classifier's class count
  // The classifier was re-initialised because the file names other classes
  // (as many), which are then in file_class_names.
  bool other_classes = false;
  std::vector<std::string> file_class_names;
  // The input the file's model was trained on, when the file says (a lockstep export).
  std::optional<InputPreprocessing> file_input;
};

// Throws an Error, starting with `what`, unless `spec` (Model::spec()) is of a tv-* model.
void check_torchvision_model(const std::string& spec, const std::string& what);

// A state dict opened (a pickle refused, the header checked; no tensor read
// yet), to load into any number of models, from any threads.
struct PretrainedWeights {
  std::string path;
  std::shared_ptr<const SafetensorsReader> file;
};
PretrainedWeights read_pretrained(const std::string& path);

// The input the file's model was trained on, when its metadata says (an export's).
std::optional<InputPreprocessing> pretrained_input(const PretrainedWeights& weights);

// Copies the state dict in `path` into `model` (a tv-* model, built and
// finalised) by name. Every tensor of the model must be in the file with its
// shape, and nothing else but num_batches_tracked; otherwise an Error names
// the file and each tensor that is missing, unexpected or of another shape
// (both shapes), and the model is left as it was. Names and shapes are
// compared before any tensor is read; then the tensors the model takes are
// read, one at a time, and checked (the model's size in memory for a while).
// The classifier alone may
// have another class count: it then keeps the model's own initialisation. So
// it does when `class_names` (the data's) are given and the file's metadata
// names other classes (an export of a run on other data).
PretrainedLoad load_pretrained(Model& model, const PretrainedWeights& weights,
                               const std::vector<std::string>& class_names = {});
PretrainedLoad load_pretrained(Model& model, const std::string& path);

// Writes a tv-* checkpoint's weights and running statistics (no momentum) as
// a state dict that torchvision's (or timm's) model of the same architecture
// loads with a strict load_state_dict, F32, with the class names in the
// metadata ("class_names", a JSON array, and byte for byte in
// "class_names_hex" when one is not UTF-8: training/metadata_text.h), the
// model's input (`input`) and "lockstep_model"; and the names one a line in
// OUT.classes.txt (OUT without its .safetensors; training/classes_text.h).
// Both files are replaced whole (training/replaced_file.h), never written
// through a link.
void export_state_dict(const LoadedCheckpoint& checkpoint, const std::string& checkpoint_path, StateDictNames names,
                       const InputPreprocessing& input, const std::string& out_path);
// True when the metadata is an export's (export_state_dict's "lockstep_model").
bool is_export_metadata(const std::map<std::string, std::string>& metadata);
// Where export_state_dict writes the class names for `out_path`.
std::string classes_path(const std::string& out_path);

}  // namespace lockstep
