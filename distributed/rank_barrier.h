#pragma once
// RankBarrier: where the ranks of an in-process collective (one thread each)
// meet, with the collective timeout and an abort. The local communicator and
// the hierarchical one's local stage both wait on it.
//  - arrive_and_wait() returns once every rank has arrived;
//  - abort(reason) releases every waiting rank, and every later arrival, with
//    Cancelled carrying the first reason;
//  - a rank that waits longer than the timeout aborts the barrier and throws
//    an Error naming the ranks that did not arrive.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace lockstep {

class RankBarrier {
public:
  // `where` names the ranks' group in messages: "" in a process alone,
  // " in process 2" for one process's share of a multi-process collective.
  RankBarrier(int ranks, std::chrono::milliseconds timeout, std::string where = "");
  void arrive_and_wait(int rank, const char* collective);
  void abort(const std::string& reason);
  // Set once aborted: for a wait elsewhere that must give up alongside (ProcessGroup::finish).
  const std::atomic<bool>& aborted() const { return aborted_; }

private:
  [[noreturn]] void cancelled(int rank, const char* collective);  // caller holds mutex_

  const int ranks_;
  const std::chrono::milliseconds timeout_;
  const std::string where_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<bool> rank_arrived_;
  std::atomic<bool> aborted_{false};
  std::string reason_;
};

}  // namespace lockstep
