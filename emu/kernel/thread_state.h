#pragma once
// What kernel code sees of the emulated thread and block it runs as: the
// fields behind threadIdx/blockIdx/blockDim/gridDim, reached through two
// thread-local pointers the block scheduler sets before each switch to a
// fiber (a fiber never leaves its OS thread, so thread_local is stable).
#include <vector_types.h>

#include <cstdint>
#include <source_location>

namespace lockstep::emu::kernel {

struct ThreadState {
  uint3 idx;
  unsigned linear;  // idx.x + idx.y * blockDim.x + idx.z * blockDim.x * blockDim.y
};

struct BlockState {
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};

inline thread_local ThreadState* t_thread = nullptr;
inline thread_local const BlockState* t_block = nullptr;

// Implemented in emu/kernel/fiber_block.cpp.
enum class WarpOp : uint8_t { syncwarp, shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all };
void syncthreads(std::source_location where);
// A warp-wide rendezvous of the lanes in `mask`: every lane deposits `value`;
// returns what the operation gives this lane (shuffled value, ballot mask).
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width, std::source_location where);

}  // namespace lockstep::emu::kernel
