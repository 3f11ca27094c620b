#pragma once
// One writer per output path: an advisory lock (flock) on a lock file beside
// the output ("<output>.lock", holding the writer's process id), taken before
// training and held until the run ends. A run locks every file it writes
// (its checkpoint, its metrics, its training curve; export its two files), so
// a second run that names any of them, under any option (another run's
// checkpoint as its --metrics), is refused at start with the first run's
// process id, instead of the two overwriting or interleaving each other's
// files.
// The lock goes with the process: a run killed by any signal leaves no lock
// behind (its lock file, if left, is taken over by the next run).
#include <string>

namespace lockstep {

class OutputLock {
public:
  // Throws an Error naming `option` ("--checkpoint"), the path and the other
  // run's process id when another process holds the lock, and naming the
  // lock file when it cannot be created or is not a lockstep lock file. Once
  // held, removes the temporary files of writes of `path` that a killed run
  // left (remove_stale_temporaries).
  OutputLock(const std::string& path, const std::string& option);
  ~OutputLock();  // removes the lock file and releases the lock
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  const std::string& lock_path() const { return lock_path_; }

private:
  std::string lock_path_;
  int fd_ = -1;
};

}  // namespace lockstep
