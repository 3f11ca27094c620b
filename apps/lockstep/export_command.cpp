// `lockstep export`: a tv-* checkpoint as a torchvision or timm state dict.
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "training/checkpoint.h"
#include "base/error.h"
#include "training/pretrained.h"

namespace lockstep::app {

int run_export(const ExportSettings& settings) {
  std::error_code ec;
  LS_CHECK(!std::filesystem::equivalent(settings.checkpoint, settings.output, ec), "export: the output ",
           settings.output, " is the checkpoint itself; name another file");
  const StateDictNames names = parse_state_dict_names(settings.format, "--format");
  const LoadedCheckpoint checkpoint = read_checkpoint(settings.checkpoint);
  export_state_dict(checkpoint, settings.checkpoint, names, settings.output);
  std::printf("%s: %s state dict of %s (%zu classes; names in %s)\n", settings.output.c_str(),
              settings.format.c_str(), checkpoint.info.model_spec.c_str(), checkpoint.info.class_names.size(),
              classes_path(settings.output).c_str());
  return 0;
}

}  // namespace lockstep::app
