// Element-wise sums and copies (a float4 per thread when every pointer is
// 16-byte aligned, a float otherwise), bias broadcasts and fixed-order sums.
#include "kernels/cuda/tensor_ops_cuda.h"

#include <climits>
#include <cstdint>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "kernels/cuda/channel_reduce.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/elementwise_math.h"

namespace lockstep::cuda {
namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kThreads;

__device__ __forceinline__ float4 operator+(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// Grid-stride over float4s; the first thread of the grid also does the 1-3
// trailing floats.
__global__ void add_vec(const float* a, const float* b, float* y, int64_t n) {
  const int64_t n4 = n / 4;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += step)
    reinterpret_cast<float4*>(y)[i] = reinterpret_cast<const float4*>(a)[i] + reinterpret_cast<const float4*>(b)[i];
  if (first == 0)
    for (int64_t e = n4 * 4; e < n; ++e) y[e] = a[e] + b[e];
}

__global__ void add_scalar(const float* a, const float* b, float* y, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) y[i] = a[i] + b[i];
}

__global__ void add_channel_bias_kernel(float* y, const float* bias, channel_reduce::Layout l) {
  channel_reduce::for_each_value(l, [&](uint32_t c, int64_t i) { y[i] += bias[c]; });
}

__global__ void fill_rows_kernel(float* y, const float* bias, int64_t total, int64_t cols) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step)
    y[i] = bias[i % cols];
}

// One thread per column: reads across a row are coalesced, rows go in order.
__global__ void column_sums_kernel(const float* x, int64_t rows, int64_t cols, float* out) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) sum += x[r * cols + c];
  out[c] = static_cast<float>(sum);
}

template <typename T> struct SourceList {
  const T* at[kMaxSummedBuffers];
};

template <typename T>
__global__ void sum_buffers_kernel(SourceList<T> srcs, int count, T* dst, int64_t begin, int64_t end) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = begin + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < end; i += step) {
    T sum = srcs.at[0][i];
    for (int r = 1; r < count; ++r) sum += srcs.at[r][i];
    dst[i] = sum;
  }
}

}  // namespace

void add(cudaStream_t stream, const float* a, const float* b, float* y, int64_t n) {
  if (n <= 0) return;
  if (aligned16(a) && aligned16(b) && aligned16(y)) {
    LS_LAUNCH(grid_for(n / 4 + 1), kThreads, 0, stream, add_vec)(a, b, y, n);
    LS_CUDA_CHECK_LAUNCH("add_vec");
  } else {
    LS_LAUNCH(grid_for(n), kThreads, 0, stream, add_scalar)(a, b, y, n);
    LS_CUDA_CHECK_LAUNCH("add_scalar");
  }
}

void copy_or_add(cudaStream_t stream, const float* src, float* dst, int64_t n, bool accumulate) {
  if (n <= 0) return;
  if (!accumulate) {
    if (src != dst) LS_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  add(stream, dst, src, dst, n);  // element i reads only element i: src == dst is fine
}

void add_channel_bias(cudaStream_t stream, float* y, const float* bias, int64_t n, int64_t channels, int64_t spatial,
                      MemoryFormat format) {
  if (n * channels * spatial <= 0) return;
  const channel_reduce::Layout l = channel_reduce::layout_for(n, channels, spatial, format);
  LS_LAUNCH(channel_reduce::value_blocks(l), kThreads, 0, stream, add_channel_bias_kernel)(y, bias, l);
  LS_CUDA_CHECK_LAUNCH("add_channel_bias");
}

void fill_rows(cudaStream_t stream, float* y, const float* bias, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  if (total <= 0) return;
  LS_LAUNCH(grid_for(total), kThreads, 0, stream, fill_rows_kernel)(y, bias, total, cols);
  LS_CUDA_CHECK_LAUNCH("fill_rows");
}

void column_sums(cudaStream_t stream, const float* x, int64_t rows, int64_t cols, float* out) {
  if (cols <= 0) return;
  LS_LAUNCH(static_cast<unsigned>((cols + kThreads - 1) / kThreads), kThreads, 0, stream, column_sums_kernel)(x, rows, cols,
                                                                                                      out);
  LS_CUDA_CHECK_LAUNCH("column_sums");
}

namespace {
template <typename T>
void sum_buffers_of(cudaStream_t stream, const T* const* srcs, int count, T* dst, int64_t begin, int64_t end) {
  LS_CHECK(count >= 1 && count <= kMaxSummedBuffers, "sum_buffers: ", count, " buffers, at most ",
           kMaxSummedBuffers);
  if (end <= begin) return;
  SourceList<T> list{};
  for (int r = 0; r < count; ++r) list.at[r] = srcs[r];
  LS_LAUNCH(grid_for(end - begin), kThreads, 0, stream, sum_buffers_kernel<T>)(list, count, dst, begin, end);
  LS_CUDA_CHECK_LAUNCH("sum_buffers");
}
}  // namespace

void sum_buffers(cudaStream_t stream, const float* const* srcs, int count, float* dst, int64_t begin, int64_t end) {
  sum_buffers_of(stream, srcs, count, dst, begin, end);
}

void sum_buffers(cudaStream_t stream, const double* const* srcs, int count, double* dst, int64_t begin,
                 int64_t end) {
  sum_buffers_of(stream, srcs, count, dst, begin, end);
}

size_t channel_sums_scratch_bytes(int64_t n, int64_t channels, int64_t spatial) {
  const channel_reduce::Layout l = channel_reduce::layout_for(n, channels, spatial);
  return (sizeof(double) * static_cast<size_t>(l.channels * l.splits) + 15) / 16 * 16;
}

void channel_sums(cudaStream_t stream, const float* x, int64_t n, int64_t channels, int64_t spatial, float* out,
                  void* scratch, MemoryFormat format) {
  using namespace channel_reduce;
  if (channels <= 0) return;
  const Layout l = layout_for(n, channels, spatial, format);
  auto* partial = static_cast<double*>(scratch);
  LS_LAUNCH(run_blocks(l), kThreads, 0, stream, run_sums)(x, l, partial);
  LS_CUDA_CHECK_LAUNCH("run_sums");
  LS_LAUNCH(channel_blocks(channels), kThreads, 0, stream, finish_sums)(l, partial, out);
  LS_CUDA_CHECK_LAUNCH("finish_sums");
}

}  // namespace lockstep::cuda
