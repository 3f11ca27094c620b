#pragma once
// HierarchicalCommunicator: the all-reduce of a multi-process run on the
// CPU, over every replica of every process. Three stages per call:
//  1. local sum: the process's replicas add their buffers, each rank one
//     share of the elements, in rank order: floats into a double buffer
//     (distributed/exact_sum.h: the same bits as one process holding every
//     replica), doubles into local rank 0's buffer;
//  2. local rank 0 starts a non-blocking sum of that buffer over the
//     processes (ProcessGroup::start_sum) and every rank returns, so the
//     next bucket's backward runs while the bytes travel;
//  3. wait(): local rank 0 finishes every sum it started, and every rank
//     rounds (floats) or copies (doubles) the results into its own buffers.
// Every process ends with the same bits, since each process's copy comes
// from one process-level sum. A lost or hung process turns into an Error on
// local rank 0 (naming it) and Cancelled on the others.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/communicator_interface.h"
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
  // The double buffer of the `index`-th float sum since the last wait, of at
  // least `count` elements; the caller holds mutex_.
  double* float_sums(int index, int64_t count);

  struct Waiting {
    void* data;     // the rank's own buffer
    int64_t count;
    double* sums;   // where the sum over every process lands: a float sum's doubles, or local rank 0's buffer
    bool floats;    // round `sums` into `data` (floats) or copy it (doubles)
  };

  int local_ranks_;
  std::shared_ptr<ProcessGroup> processes_;
  RankBarrier barrier_;  // the local ranks'
  std::mutex mutex_;     // posted_, started_, float_sums_
  std::vector<void*> posted_;
  std::vector<int64_t> posted_bytes_;
  std::vector<int> calls_;                     // per local rank: its sums since the last wait
  std::vector<std::unique_ptr<std::vector<double>>> float_sums_;  // per sum since the last wait, kept for the next
  std::vector<int64_t> started_;               // local rank 0's tickets since the last wait
  std::vector<std::vector<Waiting>> waiting_;  // per local rank: its buffers awaiting the sum
};

}  // namespace lockstep
