#include "run_locks.h"

#include <filesystem>

namespace lockstep::app {

std::vector<RunOutput> locked_outputs(const TrainSettings& s) {
  std::vector<RunOutput> out = {{s.checkpoint, "--checkpoint"}};
  std::error_code ec;
  // A device or FIFO is shared by design (/dev/null), and no lock file can go beside it.
  const auto metrics = std::filesystem::status(s.metrics, ec);
  if (!s.metrics.empty() && (!std::filesystem::exists(metrics) || std::filesystem::is_regular_file(metrics)))
    out.push_back({s.metrics, "--metrics"});
  out.push_back({curve_path(s), s.plot.empty() ? "the training curve (--plot)" : "--plot"});
  if (s.keep_best) out.push_back({best_checkpoint_path(s), "--keep-best"});
  return out;
}

std::vector<std::unique_ptr<OutputLock>> lock_run_outputs(const TrainSettings& s) {
  std::vector<std::unique_ptr<OutputLock>> locks;
  for (const RunOutput& out : locked_outputs(s)) locks.push_back(std::make_unique<OutputLock>(out.path, out.option));
  return locks;
}

}  // namespace lockstep::app
