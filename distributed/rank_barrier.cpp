#include "distributed/rank_barrier.h"

#include <algorithm>
#include <new>

#include "base/error.h"

namespace lockstep {

RankBarrier::RankBarrier(int ranks, std::chrono::milliseconds timeout, std::string where)
    : ranks_(ranks), timeout_(timeout), where_(std::move(where)), rank_arrived_(static_cast<size_t>(ranks), false) {
  LS_CHECK(ranks >= 1, "a communicator needs at least one rank, got ", ranks);
}

void RankBarrier::cancelled(int rank, const char* collective) {
  LS_CANCEL("collective ", collective, " on rank ", rank, where_, " cancelled: ", reason_);
}

void RankBarrier::arrive_and_wait(int rank, const char* collective) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_.load()) cancelled(rank, collective);
  if (ranks_ == 1) return;
  const uint64_t generation = generation_;
  rank_arrived_[static_cast<size_t>(rank)] = true;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    std::fill(rank_arrived_.begin(), rank_arrived_.end(), false);
    ++generation_;
    cv_.notify_all();
    return;
  }
  const bool done = cv_.wait_for(lock, timeout_, [&] { return aborted_.load() || generation_ != generation; });
  if (aborted_.load()) cancelled(rank, collective);
  if (!done) {
    std::string missing;
    for (int r = 0; r < ranks_; ++r)
      if (!rank_arrived_[static_cast<size_t>(r)]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    reason_ = "collective " + std::string(collective) + " hung" + where_ + ": rank(s) " + missing +
              " did not arrive within " + std::to_string(timeout_.count()) + " ms";
    aborted_.store(true);
    cv_.notify_all();
    LS_FAIL(reason_);
  }
}

void RankBarrier::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The first reason is the one reported. Out of memory, the ranks are
  // released without it rather than left to wait out the timeout.
  if (!aborted_.load()) {
    try {
      reason_ = reason;
    } catch (const std::bad_alloc&) {
    }
  }
  aborted_.store(true);
  cv_.notify_all();
}

}  // namespace lockstep
