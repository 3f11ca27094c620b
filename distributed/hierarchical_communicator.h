#pragma once
// HierarchicalCommunicator: the all-reduce of a multi-process run on the
// CPU, over every replica of every process. Three stages per call:
//  1. local sum: the process's replicas add their buffers into local rank
//     0's, each rank one share of the elements, in rank order;
//  2. local rank 0 starts a non-blocking sum of that buffer over the
//     processes (ProcessGroup::start_sum) and every rank returns, so the
//     next bucket's backward runs while the bytes travel;
//  3. wait(): local rank 0 finishes every sum it started, and the other ranks
//     copy the results into their own buffers (the local broadcast).
// Every process ends with the same bits, since each process's copy comes
// from one process-level sum. A lost or hung process turns into an Error on
// local rank 0 (naming it) and Cancelled on the others.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "distributed/process_group.h"
#include "distributed/rank_barrier.h"

namespace lockstep {

class HierarchicalCommunicator final : public Communicator {
public:
  HierarchicalCommunicator(int local_ranks, std::shared_ptr<ProcessGroup> processes,
                           std::chrono::milliseconds timeout = default_collective_timeout);
  int size() const override { return local_ranks_ * processes_->size(); }
  void all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) override;
  void all_reduce_sum(int rank, Context& ctx, double* data, int64_t count) override;
  void wait(int rank, Context& ctx) override;
  void abort(const std::string& reason) override;

private:
  template <typename T> void reduce(int rank, Context& ctx, T* data, int64_t count);

  struct Started {
    const void* result;  // local rank 0's buffer, which holds the global sum once finished
    int64_t bytes;
    int64_t ticket;
  };
  struct Waiting {
    void* data;
    int64_t bytes;
  };

  int local_ranks_;
  std::shared_ptr<ProcessGroup> processes_;
  RankBarrier barrier_;  // the local ranks'
  std::mutex mutex_;     // posted_, started_
  std::vector<void*> posted_;
  std::vector<int64_t> posted_bytes_;
  std::vector<Started> started_;               // local rank 0's sums since the last wait
  std::vector<std::vector<Waiting>> waiting_;  // per local rank: its buffers awaiting the sum
};

}  // namespace lockstep
