#include "run_locks.h"

#include <filesystem>

namespace lockstep::app {

std::vector<RunOutput> locked_outputs(const RunFiles& files) {
  std::vector<RunOutput> out = {{files.checkpoint_path, "--checkpoint"}};
  std::error_code ec;
  // A device or FIFO is shared by design (/dev/null), and no lock file can go beside it.
  const auto metrics = std::filesystem::status(files.metrics_path, ec);
  if (!files.metrics_path.empty() && (!std::filesystem::exists(metrics) || std::filesystem::is_regular_file(metrics)))
    out.push_back({files.metrics_path, "--metrics"});
  out.push_back({files.curve_path, files.curve_option});
  if (files.keeps_best()) out.push_back({files.best_path, "--keep-best"});
  return out;
}

std::vector<std::unique_ptr<OutputLock>> lock_run_outputs(const RunFiles& files) {
  std::vector<std::unique_ptr<OutputLock>> locks;
  for (const RunOutput& out : locked_outputs(files))
    locks.push_back(std::make_unique<OutputLock>(out.path, out.option));
  return locks;
}

}  // namespace lockstep::app
