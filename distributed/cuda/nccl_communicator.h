#pragma once
// NcclCommunicator: one NCCL rank per distinct GPU of this process, made
// with ncclCommInitAll; each rank is driven by its replica's thread. In a
// multi-process run it is one communicator over every GPU of every process:
// process p's GPU i is global rank p x (GPUs per process) + i, the ranks
// joined with ncclCommInitRank under a unique id that process 0 makes and
// the process group (MPI) carries to the others. A
// collective is queued on the context's communication stream after an event
// that marks the gradients' producer on the compute stream, so it overlaps
// the rest of backward; wait() makes the compute stream wait for it in turn.
// A watchdog thread turns a collective that has not finished within the
// timeout, or an asynchronous NCCL error, into an abort of every rank.
//
// Every NCCL call on a rank's communicator - a collective, the watchdog's
// error query, the abort - holds that rank's lock, and an aborted rank's
// communicator (freed by ncclCommAbort) is never touched again: a rank that
// comes to it afterwards is cancelled with the abort's reason. (Checking
// "aborted?" and then calling without the lock would let an abort free the
// communicator in between.)
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/communicator_interface.h"
#include "distributed/process_group.h"
#include "runtime/cuda/cuda_context.h"

namespace lockstep {

class NcclCommunicator final : public Communicator {
public:
  // `processes`: null for this process alone, else the group whose every
  // process constructs its NcclCommunicator at the same point, each with as
  // many GPUs. Ranks passed to the calls below are this process's (local).
  NcclCommunicator(const std::vector<Device>& devices, std::chrono::milliseconds timeout,
                   ProcessGroup* processes = nullptr);
  ~NcclCommunicator() override;

  int size() const override { return global_size_; }  // every process's ranks
  void all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) override;
  void all_reduce_sum(int rank, Context& ctx, double* data, int64_t count) override;
  void wait(int rank, Context& ctx) override;
  void abort(const std::string& reason) override;

private:
  struct Rank {
    int device = 0;
    cudaEvent_t produced = nullptr;   // compute stream -> comm stream
    cudaEvent_t reduced = nullptr;    // comm stream -> compute stream
    std::mutex call;                  // held around every NCCL call on this rank's communicator
    bool aborted = false;             // under `call`: the communicator is aborted and freed
    std::chrono::steady_clock::time_point pending_since{};  // under `call`
    bool pending = false;             // under `call`: a collective queued and not yet seen complete
  };
  // ncclCommInitRank for each of this process's GPUs, inside one group call.
  void init_across_processes(const std::vector<int>& ordinals, ProcessGroup& processes);
  void check_local_rank(int rank) const;
  void all_reduce(int rank, Context& ctx, void* data, int64_t count, ncclDataType_t type);
  // Throws Cancelled with the abort's reason; the caller holds the rank's lock and found it aborted.
  [[noreturn]] void cancel(int rank, const char* what) const;
  // What the watchdog finds wrong with the ranks (empty when nothing).
  std::string check_ranks();
  void watchdog_loop();

  std::vector<ncclComm_t> comms_;  // this process's ranks
  int global_size_ = 0;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;  // abort_reason_, stopping_
  std::condition_variable cv_;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace lockstep
