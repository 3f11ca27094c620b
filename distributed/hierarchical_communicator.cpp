#include "distributed/hierarchical_communicator.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/error.h"
#include "distributed/exact_sum.h"

namespace lockstep {

HierarchicalCommunicator::HierarchicalCommunicator(int local_ranks, std::shared_ptr<ProcessGroup> processes,
                                                   std::chrono::milliseconds timeout)
    : local_ranks_(local_ranks),
      processes_(std::move(processes)),
      barrier_(local_ranks, timeout, processes_ ? " in process " + std::to_string(processes_->rank()) : ""),
      posted_(local_ranks, nullptr),
      posted_bytes_(local_ranks, 0),
      calls_(local_ranks, 0),
      waiting_(local_ranks) {
  LS_CHECK(processes_ != nullptr, "a hierarchical communicator needs a process group");
}

double* HierarchicalCommunicator::float_sums(int index, int64_t count) {
  if (static_cast<int>(float_sums_.size()) <= index) float_sums_.resize(index + 1);
  if (!float_sums_[index]) float_sums_[index] = std::make_unique<std::vector<double>>();
  std::vector<double>& sums = *float_sums_[index];
  if (static_cast<int64_t>(sums.size()) < count) sums.resize(count);
  return sums.data();
}

template <typename T>
void HierarchicalCommunicator::reduce(int rank, Context& ctx, T* data, int64_t count) {
  LS_CHECK(rank >= 0 && rank < local_ranks_, "local rank ", rank, " of a communicator of ", local_ranks_);
  LS_CHECK(ctx.device().is_cpu(), "the multi-process communicator sums host buffers; local rank ", rank, " is on ",
           ctx.device().str(), " (GPUs across processes go through NCCL)");
  const int64_t bytes = count * static_cast<int64_t>(sizeof(T));
  constexpr bool floats = std::is_same_v<T, float>;
  // Floats are summed in double, over the local ranks and then over the
  // processes, and rounded once in wait() (distributed/exact_sum.h). Sized
  // here, before the barrier, by whichever rank comes first.
  double* sums = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    posted_[rank] = data;
    posted_bytes_[rank] = bytes;
    if constexpr (floats) sums = float_sums(calls_[rank], count);
    ++calls_[rank];
  }
  if (local_ranks_ > 1) {
    barrier_.arrive_and_wait(rank, "all_reduce (post)");
    for (int r = 0; r < local_ranks_; ++r)
      LS_CHECK(posted_bytes_[r] == bytes, "all_reduce of ", bytes, " bytes on local rank ", rank, " but ",
               posted_bytes_[r], " on local rank ", r);
  }
  // Each rank adds its share of the elements over the local ranks, in rank order:
  // floats into `sums`, doubles into local rank 0's buffer.
  const int64_t begin = count * rank / local_ranks_, end = count * (rank + 1) / local_ranks_;
  if constexpr (floats) {
    std::vector<const float*> sources(local_ranks_);
    for (int r = 0; r < local_ranks_; ++r) sources[r] = static_cast<const float*>(posted_[r]);
    sum_floats_in_double(sources.data(), local_ranks_, begin, end, sums);
  } else {
    T* sum = static_cast<T*>(posted_[0]);
    for (int r = 1; r < local_ranks_; ++r) {
      const T* src = static_cast<const T*>(posted_[r]);
      for (int64_t i = begin; i < end; ++i) sum[i] += src[i];
    }
    sums = static_cast<double*>(posted_[0]);
  }
  if (local_ranks_ > 1) barrier_.arrive_and_wait(rank, "all_reduce (local sum)");
  if (rank == 0) {
    int64_t ticket = processes_->start_sum(sums, count);
    std::lock_guard<std::mutex> lock(mutex_);
    started_.push_back(ticket);
  }
  waiting_[rank].push_back({data, count, sums, floats});
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
      processes_->finish(started_.back(), &barrier_.aborted());
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      abort(e.what());  // releases the local ranks waiting for the result
      throw;
    }
  }
  if (local_ranks_ > 1) {
    barrier_.arrive_and_wait(rank, "wait (sums across processes)");
    LS_CHECK(waiting_[rank].size() == waiting_[0].size(), "local rank ", rank, " waits for ", waiting_[rank].size(),
             " sums but local rank 0 started ", waiting_[0].size());
  }
  for (const Waiting& w : waiting_[rank]) {
    if (w.floats)
      round_to_floats(w.sums, w.count, static_cast<float*>(w.data));
    else if (w.data != w.sums)
      std::memcpy(w.data, w.sums, w.count * sizeof(double));
  }
  // The sums (and local rank 0's buffers) may be overwritten, and forgotten,
  // only after every copy.
  if (local_ranks_ > 1) barrier_.arrive_and_wait(rank, "wait (local broadcast)");
  waiting_[rank].clear();
  calls_[rank] = 0;
  if (rank == 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    started_.clear();
  }
}

void HierarchicalCommunicator::abort(const std::string& reason) { barrier_.abort(reason); }

}  // namespace lockstep
