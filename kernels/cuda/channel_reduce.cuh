#pragma once
// Per-channel sums over [n, channels, spatial] images in a fixed order, shared
// by batch normalisation (kernels/cuda/batchnorm_cuda.cu) and channel_sums
// (kernels/cuda/tensor_ops_cuda.cu): one block per (channel, run of samples)
// sums its values in double (groups of threads sized to the plane walk whole
// planes), the block reduces in a fixed order, and the runs' partial sums are
// added in run order by whoever needs the total. Included by .cu files only.
//
// Both memory formats (kernels/memory_format.h): an NHWC run visits the same
// values in the same order as the NCHW one, only at other addresses, so the
// sums (and every statistic built on them) have the same bits in either
// format. On a real GPU the NHWC walk reads with a stride of C floats, not
// coalesced: correct, not yet fast (a channels-innermost reduction would read
// whole rows but sum in another order).
#include <algorithm>
#include <climits>
#include <cstdint>

#include "base/error.h"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/memory_format.h"
#include "kernels/stored_type.h"

namespace lockstep::cuda::channel_reduce {
namespace {

using detail::block_sum;
using detail::kThreads;

constexpr int64_t kTargetBlocks = 512;      // about four per SM on an H100
constexpr int64_t kMinValuesPerBlock = 4096;

// Runs per channel: enough blocks in all, at least kMinValuesPerBlock values
// each, never more runs than samples. A pure function of the shape, so the
// summation order (and the bits) never depends on the device.
int64_t splits_for(int64_t n, int64_t channels, int64_t spatial) {
  int64_t by_blocks = (kTargetBlocks + channels - 1) / channels;
  int64_t by_work = std::max<int64_t>(1, n * spatial / kMinValuesPerBlock);
  return std::max<int64_t>(1, std::min({by_blocks, by_work, n}));
}

struct Layout {
  int64_t n, channels, spatial, splits;
  int log2;  // threads per plane group (detail::for_each_in_planes)
  bool channels_last;  // NHWC: value j of channel c of a sample at j * channels + c
};

// The offset of value j (of the plane's H * W) of channel c of `sample`.
__device__ __forceinline__ int64_t value_offset(const Layout& l, int64_t sample, int64_t c, int64_t j) {
  return l.channels_last ? (sample * l.spatial + j) * l.channels + c : (sample * l.channels + c) * l.spatial + j;
}

// Calls f(flat offset) for every value of this block's (channel, run): each
// group of threads walks whole planes of the run, so no value needs a division.
template <typename F> __device__ void for_each_in_run(const Layout& l, F f) {
  const int64_t c = blockIdx.x / l.splits, s = blockIdx.x % l.splits;
  const int64_t first = l.n * s / l.splits, last = l.n * (s + 1) / l.splits;
  const int size = 1 << l.log2;
  const int lane = threadIdx.x & (size - 1);
  const int64_t groups = static_cast<int64_t>(blockDim.x >> l.log2);
  for (int64_t sample = first + (threadIdx.x >> l.log2); sample < last; sample += groups) {
    for (int64_t j = lane; j < l.spatial; j += size) f(value_offset(l, sample, c, j));
  }
}

// Calls f(channel, flat offset) for every value of the tensor: NCHW by whole
// planes (detail::for_each_in_planes, no division per value), NHWC along the
// flat order, so a warp reads and writes consecutive addresses.
template <typename F> __device__ void for_each_value(const Layout& l, F f) {
  const uint32_t channels = static_cast<uint32_t>(l.channels);
  if (!l.channels_last) {
    detail::for_each_in_planes(l.n * l.channels, l.spatial, l.log2,
                               [&](int64_t p, int64_t i) { f(static_cast<uint32_t>(p) % channels, i); });
    return;
  }
  const int64_t total = l.n * l.spatial * l.channels;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step)
    f(static_cast<uint32_t>(i % channels), i);
}

// The channel's total over its runs, in run order (the same in every block).
__device__ double channel_total(const double* partial, int64_t c, int64_t splits) {
  double total = 0.0;
  for (int64_t s = 0; s < splits; ++s) total += partial[c * splits + s];
  return total;
}

// x stored as float or bf16 (kernels/stored_type.h).
template <typename T> __global__ void __launch_bounds__(kThreads) run_sums(const T* x, Layout l, double* partial) {
  double acc = 0.0;
  for_each_in_run(l, [&](int64_t o) { acc += load(x, o); });
  double total = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void finish_sums(Layout l, const double* partial, float* out) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c < l.channels) out[c] = static_cast<float>(channel_total(partial, c, l.splits));
}

Layout layout_for(int64_t n, int64_t channels, int64_t spatial, MemoryFormat format = MemoryFormat::nchw) {
  LS_CHECK(n * channels <= static_cast<int64_t>(UINT32_MAX), "per-channel pass over ", n, " samples of ", channels,
           " channels: more planes than 32-bit indices reach");
  return {n, channels, spatial, splits_for(n, channels, spatial), detail::plane_group_log2(spatial),
          format == MemoryFormat::nhwc};
}

unsigned run_blocks(const Layout& l) { return static_cast<unsigned>(l.channels * l.splits); }
// The grid of for_each_value.
unsigned value_blocks(const Layout& l) {
  return l.channels_last ? detail::grid_for(l.n * l.spatial * l.channels)
                         : detail::plane_grid(l.n * l.channels, l.log2);
}
unsigned channel_blocks(int64_t channels) { return static_cast<unsigned>((channels + kThreads - 1) / kThreads); }

}  // namespace
}  // namespace lockstep::cuda::channel_reduce
