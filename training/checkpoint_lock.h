#pragma once
// One writer per checkpoint path: an advisory lock (flock) on a lock file
// beside the checkpoint ("<checkpoint>.lock", holding the writer's process
// id), taken before training and held until the run ends. A second run that
// names the same checkpoint is refused at start with the first run's process
// id, instead of the two overwriting each other's checkpoints every epoch.
// The lock goes with the process: a run killed by any signal leaves no lock
// behind (its lock file, if left, is taken over by the next run).
#include <string>

namespace lockstep {

class CheckpointLock {
public:
  // Throws an Error naming the checkpoint and the other run's process id when
  // another process holds the lock, and naming the lock file when it cannot
  // be created or is not a lockstep lock file. Once held, removes the
  // temporary files of writes that a killed run left (remove_stale_temporaries).
  explicit CheckpointLock(const std::string& checkpoint_path);
  ~CheckpointLock();  // removes the lock file and releases the lock
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;

  const std::string& lock_path() const { return lock_path_; }

private:
  std::string lock_path_;
  int fd_ = -1;
};

}  // namespace lockstep
