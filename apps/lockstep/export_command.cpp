// `lockstep export`: a tv-* checkpoint as a torchvision or timm state dict;
// --format onnx hands over to run_onnx_export (onnx_export/export_onnx.cpp).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "base/error.h"
#include "commands.h"
#include "layers/models.h"
#include "output_link.h"
#include "setup.h"
#include "training/checkpoint.h"
#include "training/output_lock.h"
#include "training/classes_text.h"
#include "training/metadata_text.h"
#include "training/output_files.h"
#include "training/pretrained.h"

namespace lockstep::app {

namespace {

std::optional<std::map<std::string, std::string>> safetensors_metadata(const std::string& path) {
  try {
    return read_safetensors(path, false, true).metadata;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// An export this command wrote before: replaced without --force. Another
// run's training checkpoint, or anyone else's safetensors file, is not.
bool is_export_file(const std::string& path) {
  const auto meta = safetensors_metadata(path);
  return meta && is_export_metadata(*meta);
}

// A classes file export wrote: the text it would write for the class names
// of the export beside it. A hand-written list is not, even when OUT is an
// export (it may be the only copy of someone's notes).
std::function<bool(const std::string&)> written_for(const std::string& out_path) {
  return [out_path](const std::string& path) {
    const auto meta = safetensors_metadata(out_path);
    if (!meta || !is_export_metadata(*meta)) return false;
    std::ifstream in(path, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    try {
      return text == classes_text(read_class_names(*meta, out_path));
    } catch (const Error&) {
      return false;
    }
  };
}

// The model's input and the normalisation it was trained with, as the checkpoint holds them.
InputPreprocessing input_of(const LoadedCheckpoint& checkpoint) {
  const Shape shape = graph_from_spec(checkpoint.info.model_spec)->input_shape();
  std::string size;
  for (int i = 0; i < shape.rank(); ++i) size += (i ? "x" : "") + std::to_string(shape[i]);
  const data::Normalization n = checkpoint_normalization(checkpoint.info.extra);
  return {size, n.mean, n.std};
}

}  // namespace

#if !LOCKSTEP_WITH_ONNX
int run_onnx_export(const ExportSettings&) {
  LS_FAIL("export --format onnx: this lockstep was built without ONNX (install libonnx-dev and libprotobuf-dev, "
          "as scripts/setup does, and build again)");
}
#endif

int run_export(const ExportSettings& settings) {
  if (settings.format == "onnx") return run_onnx_export(settings);
  LS_CHECK(!settings.include_preprocessing, "--include-preprocessing is for --format onnx (a state dict holds no "
           "graph to fold the normalisation into; its metadata carries it)");
  // Both files it writes go through the output rules: never the checkpoint
  // (or anything it reads), never a non-regular file or a link, and a file
  // of another kind (a training checkpoint, a hand-written list) only with
  // --force.
  const std::vector<InputPath> inputs = {{settings.checkpoint, "the checkpoint"}};
  const OutputFile state_dict{settings.output, "export's output", "a lockstep export", is_export_file};
  const OutputFile classes{classes_path(settings.output), "export's class names",
                           "the class names of the export " + settings.output, written_for(settings.output)};
  for (const OutputFile& out : {state_dict, classes}) {
    refuse_output_link(out);
    check_output_file(out, inputs, settings.force);
  }
  check_distinct_outputs({state_dict, classes});
  // A running train may write either path (its checkpoint, its metrics): not while it does.
  const OutputLock state_dict_lock(state_dict.path, state_dict.option), classes_lock(classes.path, classes.option);
  const StateDictNames names = parse_state_dict_names(settings.format, "--format");
  LoadedCheckpoint checkpoint = read_checkpoint(settings.checkpoint);
  const std::string weights = take_inference_weights(checkpoint, settings.checkpoint, settings.no_ema);
  if (!weights.empty()) std::printf("%s\n", weights.c_str());
  export_state_dict(checkpoint, settings.checkpoint, names, input_of(checkpoint), settings.output);
  std::printf("%s: %s state dict of %s (%zu classes; names in %s)\n", settings.output.c_str(),
              settings.format.c_str(), checkpoint.info.model_spec.c_str(), checkpoint.info.class_names.size(),
              classes_path(settings.output).c_str());
  return 0;
}

}  // namespace lockstep::app
