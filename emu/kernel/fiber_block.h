#pragma once
// Runs the blocks of one grid on the calling OS thread (a stream's worker):
// each block's threads are fibers; see fiber_block.cpp.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace lockstep::emu::kernel {

enum class Order { forward, reverse, warp_random };

struct GridRun {
  std::string kernel;  // name for diagnostics
  dim3 grid, block;
  int device = 0;
  Order order = Order::forward;
  uint64_t seed = 0;          // this launch's
  uint64_t session_seed = 0;  // LOCKSTEP_EMU_SEED, to replay
  uint64_t launch_number = 0;
  void (*body)(void*) = nullptr;  // runs the kernel for the current thread
  void* data = nullptr;
};

// Runs every block; on a detected fault (divergent barrier, bad shuffle,
// deadlock) reports it with fail_async and stops the grid.
void run_grid(const GridRun& run);

}  // namespace lockstep::emu::kernel
