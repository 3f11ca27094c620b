#include "distributed/hierarchical_communicator.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace lockstep {

HierarchicalCommunicator::HierarchicalCommunicator(int local_ranks, std::shared_ptr<ProcessGroup> processes,
                                                   std::chrono::milliseconds timeout)
    : local_ranks_(local_ranks),
      processes_(std::move(processes)),
      barrier_(local_ranks, timeout, processes_ ? " in process " + std::to_string(processes_->rank()) : ""),
      posted_(local_ranks, nullptr),
      posted_bytes_(local_ranks, 0),
      waiting_(local_ranks) {
  LS_CHECK(processes_ != nullptr, "a hierarchical communicator needs a process group");
}

template <typename T>
void HierarchicalCommunicator::reduce(int rank, Context& ctx, T* data, int64_t count) {
  LS_CHECK(rank >= 0 && rank < local_ranks_, "local rank ", rank, " of a communicator of ", local_ranks_);
  LS_CHECK(ctx.device().is_cpu(), "the multi-process communicator sums host buffers; local rank ", rank, " is on ",
           ctx.device().str(), " (GPUs across processes go through NCCL)");
  const int64_t bytes = count * static_cast<int64_t>(sizeof(T));
  if (local_ranks_ > 1) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      posted_[rank] = data;
      posted_bytes_[rank] = bytes;
    }
    barrier_.arrive_and_wait(rank, "all_reduce (post)");
    for (int r = 0; r < local_ranks_; ++r)
      LS_CHECK(posted_bytes_[r] == bytes, "all_reduce of ", bytes, " bytes on local rank ", rank, " but ",
               posted_bytes_[r], " on local rank ", r);
    // Each rank adds its share of the elements into local rank 0's buffer, in rank order.
    T* sum = static_cast<T*>(posted_[0]);
    int64_t begin = count * rank / local_ranks_, end = count * (rank + 1) / local_ranks_;
    for (int r = 1; r < local_ranks_; ++r) {
      const T* src = static_cast<const T*>(posted_[r]);
      for (int64_t i = begin; i < end; ++i) sum[i] += src[i];
    }
    barrier_.arrive_and_wait(rank, "all_reduce (local sum)");
  }
  if (rank == 0) {
    int64_t ticket = processes_->start_sum(data, count);
    std::lock_guard<std::mutex> lock(mutex_);
    started_.push_back({data, bytes, ticket});
  } else {
    waiting_[rank].push_back({data, bytes});
  }
}

void HierarchicalCommunicator::all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) {
  reduce(rank, ctx, data, count);
}

void HierarchicalCommunicator::all_reduce_sum(int rank, Context& ctx, double* data, int64_t count) {
  reduce(rank, ctx, data, count);
}

void HierarchicalCommunicator::wait(int rank, Context&) {
  if (rank == 0 && !started_.empty()) {
    try {
      processes_->finish(started_.back().ticket, &barrier_.aborted());
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      abort(e.what());  // releases the local ranks waiting for the result
      throw;
    }
  }
  if (local_ranks_ > 1) {
    barrier_.arrive_and_wait(rank, "wait (sums across processes)");
    if (rank != 0) {
      LS_CHECK(waiting_[rank].size() == started_.size(), "local rank ", rank, " waits for ", waiting_[rank].size(),
               " sums but local rank 0 started ", started_.size());
      for (size_t i = 0; i < started_.size(); ++i)
        std::memcpy(waiting_[rank][i].data, started_[i].result, waiting_[rank][i].bytes);
    }
    // Local rank 0 may overwrite its buffers (and forget the started sums) only after every copy.
    barrier_.arrive_and_wait(rank, "wait (local broadcast)");
  }
  waiting_[rank].clear();
  if (rank == 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    started_.clear();
  }
}

void HierarchicalCommunicator::abort(const std::string& reason) { barrier_.abort(reason); }

}  // namespace lockstep
