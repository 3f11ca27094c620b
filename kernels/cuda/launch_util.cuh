#pragma once
// Small helpers shared by the hand-written kernels' .cu files: grid sizing
// and a fixed-order block reduction in double (the same inputs always give
// the same bits, whatever the timing of the warps).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lockstep::cuda::detail {

constexpr int kThreads = 256;
// A grid never needs more blocks than this: grid-stride loops cover the rest
// (eight resident blocks of 256 threads on each of 132 SMs, with room to spare).
constexpr int64_t kMaxBlocks = 4096;

inline unsigned grid_for(int64_t work_items) {
  int64_t blocks = (work_items + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return static_cast<unsigned>(blocks);
}

// The block's sum of `value` (every thread's), valid in thread 0 only. Warps
// reduce by shuffles, then warp 0 adds the warps' sums in warp order.
__device__ inline double block_sum(double value) {
  __shared__ double warp_sums[kThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0)
    for (int w = 0; w < static_cast<int>(blockDim.x) / 32; ++w) total += warp_sums[w];
  __syncthreads();  // warp_sums may be reused by a second call
  return total;
}

}  // namespace lockstep::cuda::detail

namespace lockstep::cuda::detail {

// Per-plane work over NCHW data without a division per element: a block's
// threads form groups of 2^log2 threads (the power of two nearest above the
// plane size, at most the block), each group walks whole planes. Threads of a
// group stride over one plane; the groups of the grid stride over planes.
inline int plane_group_log2(int64_t plane_size) {
  int log2 = 0;
  while ((int64_t(1) << log2) < plane_size && (1 << log2) < kThreads) ++log2;
  return log2;
}

inline unsigned plane_grid(int64_t planes, int log2) {
  int64_t groups_per_block = kThreads >> log2;
  int64_t blocks = (planes + groups_per_block - 1) / groups_per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return static_cast<unsigned>(blocks);
}

// Calls f(plane, offset of the value) for every value of planes [0, planes).
template <typename F>
__device__ __forceinline__ void for_each_in_planes(int64_t planes, int64_t plane_size, int log2, F f) {
  const int size = 1 << log2;
  const int lane = threadIdx.x & (size - 1);
  const int64_t groups = static_cast<int64_t>(blockDim.x >> log2);
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * groups + (threadIdx.x >> log2); p < planes;
       p += static_cast<int64_t>(gridDim.x) * groups) {
    const int64_t base = p * plane_size;
    for (int64_t j = lane; j < plane_size; j += size) f(p, base + j);
  }
}

}  // namespace lockstep::cuda::detail
