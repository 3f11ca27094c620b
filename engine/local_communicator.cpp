#include "engine/local_communicator.h"

#include <algorithm>
#include <cstring>

#include "engine/error.h"

namespace lockstep {

LocalCommunicator::LocalCommunicator(int ranks, std::chrono::milliseconds timeout)
    : ranks_(ranks), timeout_(timeout), rank_arrived_(ranks, false), buffers_(ranks, nullptr), counts_(ranks, 0) {
  LS_CHECK(ranks >= 1, "a communicator needs at least one rank, got ", ranks);
}

void LocalCommunicator::arrive_and_wait(int rank, const char* where) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) LS_FAIL("collective ", where, " on rank ", rank, " cancelled: ", abort_reason_);
  uint64_t generation = generation_;
  rank_arrived_[rank] = true;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    std::fill(rank_arrived_.begin(), rank_arrived_.end(), false);
    ++generation_;
    cv_.notify_all();
    return;
  }
  bool done = cv_.wait_for(lock, timeout_, [&] { return aborted_ || generation_ != generation; });
  if (aborted_) LS_FAIL("collective ", where, " on rank ", rank, " cancelled: ", abort_reason_);
  if (!done) {
    std::string missing;
    for (int r = 0; r < ranks_; ++r)
      if (!rank_arrived_[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    aborted_ = true;
    abort_reason_ = "collective " + std::string(where) + " hung: rank(s) " + missing + " did not arrive within " +
                    std::to_string(timeout_.count()) + " ms";
    cv_.notify_all();
    LS_FAIL(abort_reason_);
  }
}

void LocalCommunicator::all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) {
  LS_CHECK(rank >= 0 && rank < ranks_, "rank ", rank, " of a communicator of ", ranks_);
  LS_CHECK(ctx.device().is_cpu(), "the local communicator sums host buffers; ", ctx.device().str(),
           " replicas need the CUDA backend's local reduce");
  if (ranks_ == 1) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_[rank] = data;
    counts_[rank] = count;
    if (static_cast<int64_t>(result_.size()) < count) result_.resize(count);
  }
  arrive_and_wait(rank, "all_reduce (post)");
  for (int r = 0; r < ranks_; ++r)
    LS_CHECK(counts_[r] == count, "all_reduce of ", count, " floats on rank ", rank, " but ", counts_[r], " on rank ",
             r);
  // Each rank sums its share of the elements over all ranks, in rank order.
  int64_t begin = count * rank / ranks_, end = count * (rank + 1) / ranks_;
  float* result = result_.data();
  std::memcpy(result + begin, buffers_[0] + begin, (end - begin) * sizeof(float));
  for (int r = 1; r < ranks_; ++r) {
    const float* src = buffers_[r];
    for (int64_t i = begin; i < end; ++i) result[i] += src[i];
  }
  arrive_and_wait(rank, "all_reduce (sum)");
  std::memcpy(data, result, count * sizeof(float));
  // Nobody may post the next collective's buffers (or resize result_) before all have copied.
  arrive_and_wait(rank, "all_reduce (copy)");
}

void LocalCommunicator::wait(int, Context&) {}

void LocalCommunicator::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!aborted_) abort_reason_ = reason;
  aborted_ = true;
  cv_.notify_all();
}

}  // namespace lockstep
