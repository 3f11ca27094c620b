#pragma once
// ProcessGroup: the processes of a multi-process run (the ranks of an MPI
// job), as the distributed layer sees them. Each process runs its own
// replicas; the process group carries what crosses processes: the sums of
// the hierarchical communicator, the step metrics, the evaluation logits, the
// broadcast of the first process's parameters, the agreement to stop.
//
// Every process must start the same operations in the same order. Calls may
// come from any one thread at a time (the main thread between steps, local
// replica 0's thread during a step); implementations serialise them.
// A run without a launcher has no ProcessGroup at all (a null pointer), so
// the one-process path is exactly what it was before processes existed.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace lockstep {

class ProcessGroup {
public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int hosts() const = 0;            // distinct host names among the processes
  virtual int processes_on_host() const = 0; // this process's host included
  virtual std::string host() const = 0;
  virtual std::string transport() const = 0; // e.g. "MPI (Open MPI v4.1.4)"

  // Starts an in-place sum over all processes and returns its ticket; the
  // buffer must stay untouched until finish() of that ticket returns.
  virtual int64_t start_sum(float* data, int64_t count) = 0;
  virtual int64_t start_sum(double* data, int64_t count) = 0;
  virtual int64_t start_max(int64_t* data, int64_t count) = 0;
  virtual int64_t start_broadcast(void* data, int64_t bytes, int root) = 0;
  // Lets started operations advance (MPI moves non-blocking collectives
  // only inside MPI calls) without waiting for them.
  virtual void progress() = 0;
  // Waits until `ticket` and every operation started before it are done.
  // Throws Error naming the processes that are gone or did not answer when
  // that takes longer than timeout(), or Cancelled as soon as `cancel` is set.
  virtual void finish(int64_t ticket, const std::atomic<bool>* cancel = nullptr) = 0;
  // Ends every process of the job with `code` (after an error was reported).
  [[noreturn]] virtual void abort_all(int code) = 0;

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

  // Blocking forms, for the main thread between steps.
  void sum(float* data, int64_t count) { finish(start_sum(data, count)); }
  void sum(double* data, int64_t count) { finish(start_sum(data, count)); }
  void max(int64_t* data, int64_t count) { finish(start_max(data, count)); }
  void broadcast(void* data, int64_t bytes, int root) { finish(start_broadcast(data, bytes, root)); }
  // True on every process when `flag` is true on any.
  bool any(bool flag) {
    int64_t v = flag ? 1 : 0;
    max(&v, 1);
    return v != 0;
  }

private:
  std::chrono::milliseconds timeout_{std::chrono::seconds(300)};
};

}  // namespace lockstep
