#pragma once
// Per-channel sums over [n, channels, spatial] images in a fixed order, shared
// by batch normalisation (kernels/cuda/batchnorm_cuda.cu) and channel_sums
// (kernels/cuda/tensor_ops_cuda.cu). Every thread sums its values in double,
// the block combines its threads in a fixed order into one partial sum per
// (channel, run), and the runs' partial sums are added in run order by
// whoever needs the total (channel_total). The runs, the threads' shares and
// the block's combining order are pure functions of the shape and the format,
// so the bits never depend on the device or on how blocks and warps are
// scheduled. Included by .cu files only.
//
// NCHW: one block per (channel, run of samples); groups of threads sized to
// the plane walk whole planes (no division per value), and the block adds its
// threads by block_sum (shuffle trees, then the warps in order).
//
// NHWC (channels last, kernels/memory_format.h): the images are a matrix of
// rows = n * spatial pixels by `channels` columns. One block per (tile of
// channels, run of rows): a tile is W = 2^tile_log2 channels (the power of
// two at or above `channels`, at most 32), the block's threads form
// kThreads / W row groups of W threads, thread `lane` of group g sums channel
// tile * W + lane over rows first + g, first + g + groups, ... of the run.
// A warp thus reads W consecutive channels of 32 / W consecutive pixels:
// whole 128-byte rows of the matrix, coalesced. The block then adds its row
// groups pairwise (group g += group g + half, half = groups / 2, ..., 1).
// That order differs from NCHW's, so NHWC and NCHW sums of the same values
// may differ in the last bits of the double, and (rarely: when it lies next to
// a rounding boundary) in the last bit of a statistic rounded to float.
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
constexpr int kMaxTileLog2 = 5;             // an NHWC tile is at most a warp's 32 channels

// Channels per NHWC tile, as a power of two: the least at or above `channels`,
// at most 32, so a small C (3, 16) keeps every lane of a warp busy.
int tile_log2_for(int64_t channels) {
  int log2 = 0;
  while ((int64_t(1) << log2) < channels && log2 < kMaxTileLog2) ++log2;
  return log2;
}

int64_t tiles_for(int64_t channels, int tile_log2) {
  return (channels + (int64_t(1) << tile_log2) - 1) >> tile_log2;
}

// Runs per block column (a channel in NCHW, a tile in NHWC): enough blocks in
// all, at least kMinValuesPerBlock values each, never more runs than `units`
// (samples in NCHW, rows in NHWC). A pure function of the shape, so the
// summation order (and the bits) never depends on the device.
int64_t splits_for(int64_t columns, int64_t values, int64_t units) {
  int64_t by_blocks = (kTargetBlocks + columns - 1) / columns;
  int64_t by_work = std::max<int64_t>(1, values / kMinValuesPerBlock);
  return std::max<int64_t>(1, std::min({by_blocks, by_work, units}));
}

struct Layout {
  int64_t n, channels, spatial, splits;
  int log2;  // NCHW: threads per plane group (detail::for_each_in_planes)
  bool channels_last;  // NHWC: value j of channel c of a sample at j * channels + c
  int tile_log2;       // NHWC: channels per tile of a run's block
};

// The offset of value j (of the plane's H * W) of channel c of `sample`.
__device__ __forceinline__ int64_t value_offset(const Layout& l, int64_t sample, int64_t c, int64_t j) {
  return l.channels_last ? (sample * l.spatial + j) * l.channels + c : (sample * l.channels + c) * l.spatial + j;
}

// The channel this thread sums in its run's block: the block's (NCHW), or its
// lane's in the block's tile (NHWC; at or past `channels` in a last, partial
// tile: the thread then sums nothing).
__device__ __forceinline__ int64_t run_channel(const Layout& l) {
  if (!l.channels_last) return blockIdx.x / l.splits;
  return ((blockIdx.x / l.splits) << l.tile_log2) + (threadIdx.x & ((1 << l.tile_log2) - 1));
}

// Calls f(flat offset) for every value this thread sums (of its run_channel).
// NCHW: each group of threads walks whole planes of the run, so no value
// needs a division. NHWC: the thread's row group walks the run's rows.
template <typename F> __device__ void for_each_in_run(const Layout& l, F f) {
  const int64_t s = blockIdx.x % l.splits;
  if (l.channels_last) {
    const int64_t c = run_channel(l);
    if (c >= l.channels) return;
    const int64_t rows = l.n * l.spatial;
    const int64_t first = rows * s / l.splits, last = rows * (s + 1) / l.splits;
    const int64_t groups = static_cast<int64_t>(blockDim.x >> l.tile_log2);
    for (int64_t r = first + (threadIdx.x >> l.tile_log2); r < last; r += groups) f(r * l.channels + c);
    return;
  }
  const int64_t c = blockIdx.x / l.splits;
  const int64_t first = l.n * s / l.splits, last = l.n * (s + 1) / l.splits;
  const int size = 1 << l.log2;
  const int lane = threadIdx.x & (size - 1);
  const int64_t groups = static_cast<int64_t>(blockDim.x >> l.log2);
  for (int64_t sample = first + (threadIdx.x >> l.log2); sample < last; sample += groups) {
    for (int64_t j = lane; j < l.spatial; j += size) f(value_offset(l, sample, c, j));
  }
}

// Combines every thread's `value` (its for_each_in_run sum) into the run's
// partial sums: partial[c * splits + run] for each channel c of the block, in
// the fixed orders of the file header. Every thread of the block must call it.
__device__ void write_run_sum(const Layout& l, double value, double* partial) {
  if (!l.channels_last) {
    const double total = block_sum(value);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
    return;
  }
  __shared__ double row_sums[kThreads];
  const int width = 1 << l.tile_log2;
  row_sums[threadIdx.x] = value;
  __syncthreads();
  for (int half = static_cast<int>(blockDim.x >> l.tile_log2) / 2; half > 0; half >>= 1) {
    if (static_cast<int>(threadIdx.x) < half * width) row_sums[threadIdx.x] += row_sums[threadIdx.x + half * width];
    __syncthreads();
  }
  const int64_t c = run_channel(l);
  if (static_cast<int>(threadIdx.x) < width && c < l.channels)
    partial[c * l.splits + blockIdx.x % l.splits] = row_sums[threadIdx.x];
  __syncthreads();  // row_sums may be reused by a second call
}

// Calls f(channel, flat offset) for every value of the tensor: NCHW by whole
// planes (detail::for_each_in_planes, no division per value), NHWC along the
// flat order, so a warp reads and writes consecutive addresses. The NHWC
// grid-stride step is the grid's thread count rounded down to a multiple of
// `channels`, so a thread's channel is fixed: one division per thread, none
// per value (value_blocks gives at least `channels` threads).
template <typename F> __device__ void for_each_value(const Layout& l, F f) {
  const uint32_t channels = static_cast<uint32_t>(l.channels);
  if (!l.channels_last) {
    detail::for_each_in_planes(l.n * l.channels, l.spatial, l.log2,
                               [&](int64_t p, int64_t i) { f(static_cast<uint32_t>(p) % channels, i); });
    return;
  }
  const int64_t total = l.n * l.spatial * l.channels;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x / l.channels * l.channels;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (first >= step) return;
  const uint32_t c = static_cast<uint32_t>(first % l.channels);
  for (int64_t i = first; i < total; i += step) f(c, i);
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
  write_run_sum(l, acc, partial);
}

__global__ void finish_sums(Layout l, const double* partial, float* out) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c < l.channels) out[c] = static_cast<float>(channel_total(partial, c, l.splits));
}

Layout layout_for(int64_t n, int64_t channels, int64_t spatial, MemoryFormat format = MemoryFormat::nchw) {
  LS_CHECK(n * channels <= static_cast<int64_t>(UINT32_MAX), "per-channel pass over ", n, " samples of ", channels,
           " channels: more planes than 32-bit indices reach");
  const int log2 = detail::plane_group_log2(spatial), tile_log2 = tile_log2_for(channels);
  if (format == MemoryFormat::nhwc) {
    const int64_t rows = n * spatial, width = std::min<int64_t>(channels, int64_t(1) << tile_log2);
    return {n, channels, spatial, splits_for(tiles_for(channels, tile_log2), rows * width, rows), log2, true,
            tile_log2};
  }
  return {n, channels, spatial, splits_for(channels, n * spatial, n), log2, false, tile_log2};
}

// The partial sums a run pass writes (channels * splits doubles), enough for
// either format: what the scratch of every caller is sized by.
int64_t partials_for(int64_t n, int64_t channels, int64_t spatial) {
  return channels * std::max(layout_for(n, channels, spatial, MemoryFormat::nchw).splits,
                             layout_for(n, channels, spatial, MemoryFormat::nhwc).splits);
}

unsigned run_blocks(const Layout& l) {
  return static_cast<unsigned>((l.channels_last ? tiles_for(l.channels, l.tile_log2) : l.channels) * l.splits);
}
// The grid of for_each_value (NHWC: at least one thread per channel).
unsigned value_blocks(const Layout& l) {
  if (!l.channels_last) return detail::plane_grid(l.n * l.channels, l.log2);
  return std::max<unsigned>(detail::grid_for(l.n * l.spatial * l.channels),
                            static_cast<unsigned>((l.channels + kThreads - 1) / kThreads));
}
unsigned channel_blocks(int64_t channels) { return static_cast<unsigned>((channels + kThreads - 1) / kThreads); }

}  // namespace
}  // namespace lockstep::cuda::channel_reduce
