// `lockstep export --format onnx`: any checkpoint as an ONNX model for
// inference (onnx_model.h), written under the rules of every file lockstep
// writes (training/output_files.h): never onto the checkpoint, never through
// a link, a file of another kind replaced only with --force, one writer at a
// time (training/output_lock.h), and the file replaced whole or not at all.
#include <climits>
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "apps/lockstep/commands.h"
#include "onnx_model.h"
#include "apps/lockstep/output_link.h"
#include "apps/lockstep/setup.h"
#include "training/checkpoint.h"
#include "training/output_files.h"
#include "training/output_lock.h"
#include "training/replaced_file.h"

namespace lockstep::app {

namespace {

// An ONNX model this command wrote before: replaced without --force. Any
// other file (someone's own ONNX model, a checkpoint) is not.
bool is_lockstep_onnx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto model;
  return in && model.ParseFromIstream(&in) && model.producer_name() == onnx_export::kProducer;
}

}  // namespace

int run_onnx_export(const ExportSettings& settings) {
  const OutputFile out{settings.output, "export's output", "an ONNX model lockstep exported", is_lockstep_onnx};
  refuse_output_link(out);
  check_output_file(out, {{settings.checkpoint, "the checkpoint"}}, settings.force);
  // A running train may write this path (its checkpoint, its metrics): not while it does.
  const OutputLock lock(out.path, out.option);
  LoadedCheckpoint checkpoint = read_checkpoint(settings.checkpoint);
  const std::string weights = take_inference_weights(checkpoint, settings.checkpoint, settings.no_ema);
  if (!weights.empty()) std::printf("%s\n", weights.c_str());
  const onnx::ModelProto model =
      onnx_export::onnx_model(checkpoint, settings.checkpoint, settings.include_preprocessing);
  // Protobuf cannot read a message above 2 GiB; ONNX keeps larger weights in
  // files beside the model, which this export does not write.
  const size_t bytes = model.ByteSizeLong();
  LS_CHECK(bytes <= static_cast<size_t>(INT_MAX), "checkpoint ", settings.checkpoint, ": its ONNX model would take ",
           bytes, " bytes, above the 2 GiB one ONNX file can hold");
  const std::string serialized = model.SerializeAsString();
  write_replacing(settings.output, [&](std::FILE* f) {
    return std::fwrite(serialized.data(), 1, serialized.size(), f) == serialized.size();
  });

  const std::string precision = checkpoint_setting(checkpoint.info.extra, "precision");
  if (precision == "bf16")
    std::fprintf(stderr,
                 "note: %s trained in bf16; the ONNX model is FP32, from its FP32 master weights, so its outputs "
                 "may differ slightly from lockstep's in bf16\n",
                 settings.checkpoint.c_str());
  const data::Normalization norm = checkpoint_normalization(checkpoint.info.extra);
  const char* input = norm.mean.empty()                 ? "pixels in [0, 1], no normalisation"
                      : settings.include_preprocessing ? "pixels in [0, 1], normalised in the graph"
                                                       : "pixels in [0, 1], normalise with input_mean and input_std "
                                                         "of its metadata";
  std::printf("%s: ONNX model (opset %d) of %s, %zu classes; input: %s\n", settings.output.c_str(),
              onnx_export::kOpset, checkpoint.info.model_spec.c_str(), checkpoint.info.class_names.size(), input);
  return 0;
}

}  // namespace lockstep::app
