#pragma once
// The locks of a `lockstep train` run (training/output_lock.h): one on every
// file it writes (--checkpoint, --metrics, the training curve, --keep-best's), held from
// before training until the run ends. Two runs given one --metrics would
// interleave their lines; a run whose --metrics is another live run's
// --checkpoint would see it replaced at the other's next epoch. Each is
// refused at start, naming the other run.
#include <memory>
#include <string>
#include <vector>

#include "run_plan.h"
#include "training/output_lock.h"

namespace lockstep::app {

struct RunOutput {
  std::string path;
  std::string option;  // "--metrics"
};

// The files a run writes that take a lock: not a --metrics that is a device or a FIFO (/dev/null).
std::vector<RunOutput> locked_outputs(const RunFiles& files);

// Takes every lock of locked_outputs(files), or throws (releasing those taken).
std::vector<std::unique_ptr<OutputLock>> lock_run_outputs(const RunFiles& files);

}  // namespace lockstep::app
