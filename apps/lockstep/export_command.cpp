// `lockstep export`: a tv-* checkpoint as a torchvision or timm state dict.
#include <cstdio>
#include <fstream>
#include <vector>

#include "commands.h"
#include "training/checkpoint.h"
#include "base/error.h"
#include "training/output_files.h"
#include "training/pretrained.h"

namespace lockstep::app {

namespace {

// The first bytes of a file (up to `n`).
std::string head(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

// A safetensors file: an 8-byte header length, then the header's JSON object.
bool is_safetensors_file(const std::string& path) {
  const std::string bytes = head(path, 9);
  return bytes.size() == 9 && bytes[8] == '{';
}

// Text (the class names export writes one per line): no NUL byte.
bool is_text_file(const std::string& path) { return head(path, 4096).find('\0') == std::string::npos; }

}  // namespace

int run_export(const ExportSettings& settings) {
  // Both files it writes go through the output rules: never the checkpoint
  // (or anything it reads), never a non-regular file, and a file of another
  // kind only with --force.
  const std::vector<InputPath> inputs = {{settings.checkpoint, "the checkpoint"}};
  const OutputFile state_dict{settings.output, "export's output", "a safetensors file", is_safetensors_file};
  const OutputFile classes{classes_path(settings.output), "export's class names", "a text file", is_text_file};
  check_output_file(state_dict, inputs, settings.force);
  check_output_file(classes, inputs, settings.force);
  check_distinct_outputs({state_dict, classes});
  const StateDictNames names = parse_state_dict_names(settings.format, "--format");
  const LoadedCheckpoint checkpoint = read_checkpoint(settings.checkpoint);
  export_state_dict(checkpoint, settings.checkpoint, names, settings.output);
  std::printf("%s: %s state dict of %s (%zu classes; names in %s)\n", settings.output.c_str(),
              settings.format.c_str(), checkpoint.info.model_spec.c_str(), checkpoint.info.class_names.size(),
              classes_path(settings.output).c_str());
  return 0;
}

}  // namespace lockstep::app
