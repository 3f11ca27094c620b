#pragma once
// The CPU compute pool on `threads` threads for a scope, as it was after it.
#include "kernels/cpu/thread_pool.h"

namespace lockstep::testing {

struct ComputeThreadsFor {
  int saved;
  explicit ComputeThreadsFor(int threads) : saved(cpu::compute_threads()) { cpu::set_compute_threads(threads); }
  ~ComputeThreadsFor() { cpu::set_compute_threads(saved); }
  ComputeThreadsFor(const ComputeThreadsFor&) = delete;
  ComputeThreadsFor& operator=(const ComputeThreadsFor&) = delete;
};

}  // namespace lockstep::testing
