// Element-wise sums and copies (four elements per thread when every pointer
// is aligned for it, one otherwise), bias broadcasts and fixed-order sums.
// The activation operands are templates on their stored type T (float or
// bf16, kernels/stored_type.h; math in float, sums in double); biases and
// their gradients are FP32.
#include "kernels/cuda/tensor_ops_cuda.h"

#include <climits>
#include <cstdint>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "kernels/cuda/channel_reduce.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/stored_vec.cuh"
#include "kernels/elementwise_math.h"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::grid_for;
using detail::kThreads;
using detail::load4;
using detail::store4;
using detail::vec4_aligned;

__device__ __forceinline__ float4 operator+(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// Grid-stride over groups of four; the first thread of the grid also does
// the 1-3 trailing elements.
template <typename T> __global__ void add_vec(const T* a, const T* b, T* y, int64_t n) {
  const int64_t n4 = n / 4;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += step) store4(y, i, load4(a, i) + load4(b, i));
  if (first == 0)
    for (int64_t e = n4 * 4; e < n; ++e) store(y, e, load(a, e) + load(b, e));
}

template <typename T> __global__ void add_scalar(const T* a, const T* b, T* y, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    store(y, i, load(a, i) + load(b, i));
}

template <typename T> __global__ void add_channel_bias_kernel(T* y, const float* bias, channel_reduce::Layout l) {
  channel_reduce::for_each_value(l, [&](uint32_t c, int64_t i) { store(y, i, load(y, i) + bias[c]); });
}

template <typename T> __global__ void fill_rows_kernel(T* y, const float* bias, int64_t total, int64_t cols) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step)
    store(y, i, bias[i % cols]);
}

// One thread per column: reads across a row are coalesced, rows go in order.
template <typename T> __global__ void column_sums_kernel(const T* x, int64_t rows, int64_t cols, float* out) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) sum += load(x, r * cols + c);
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

template <typename T> void add(cudaStream_t stream, const T* a, const T* b, T* y, int64_t n) {
  if (n <= 0) return;
  if (vec4_aligned<T>(a) && vec4_aligned<T>(b) && vec4_aligned<T>(y)) {
    LS_LAUNCH(grid_for(n / 4 + 1), kThreads, 0, stream, add_vec<T>)(a, b, y, n);
    LS_CUDA_CHECK_LAUNCH("add_vec");
  } else {
    LS_LAUNCH(grid_for(n), kThreads, 0, stream, add_scalar<T>)(a, b, y, n);
    LS_CUDA_CHECK_LAUNCH("add_scalar");
  }
}

template <typename T> void copy_or_add(cudaStream_t stream, const T* src, T* dst, int64_t n, bool accumulate) {
  if (n <= 0) return;
  if (!accumulate) {
    if (src != dst) LS_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  add(stream, static_cast<const T*>(dst), src, dst, n);  // element i reads only element i: src == dst is fine
}

template <typename T>
void add_channel_bias(cudaStream_t stream, T* y, const float* bias, int64_t n, int64_t channels, int64_t spatial,
                      MemoryFormat format) {
  if (n * channels * spatial <= 0) return;
  const channel_reduce::Layout l = channel_reduce::layout_for(n, channels, spatial, format);
  LS_LAUNCH(channel_reduce::value_blocks(l), kThreads, 0, stream, add_channel_bias_kernel<T>)(y, bias, l);
  LS_CUDA_CHECK_LAUNCH("add_channel_bias");
}

template <typename T> void fill_rows(cudaStream_t stream, T* y, const float* bias, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  if (total <= 0) return;
  LS_LAUNCH(grid_for(total), kThreads, 0, stream, fill_rows_kernel<T>)(y, bias, total, cols);
  LS_CUDA_CHECK_LAUNCH("fill_rows");
}

template <typename T> void column_sums(cudaStream_t stream, const T* x, int64_t rows, int64_t cols, float* out) {
  if (cols <= 0) return;
  LS_LAUNCH(static_cast<unsigned>((cols + kThreads - 1) / kThreads), kThreads, 0, stream, column_sums_kernel<T>)(
      x, rows, cols, out);
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
  return (sizeof(double) * static_cast<size_t>(channel_reduce::partials_for(n, channels, spatial)) + 15) / 16 * 16;
}

template <typename T>
void channel_sums(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial, float* out,
                  void* scratch, MemoryFormat format) {
  using namespace channel_reduce;
  if (channels <= 0) return;
  const Layout l = layout_for(n, channels, spatial, format);
  auto* partial = static_cast<double*>(scratch);
  LS_LAUNCH(run_blocks(l), kThreads, 0, stream, run_sums<T>)(x, l, partial);
  LS_CUDA_CHECK_LAUNCH("run_sums");
  LS_LAUNCH(channel_blocks(channels), kThreads, 0, stream, finish_sums)(l, partial, out);
  LS_CUDA_CHECK_LAUNCH("finish_sums");
}

#define LS_INSTANTIATE(T)                                                                                     \
  template void add<T>(cudaStream_t, const T*, const T*, T*, int64_t);                                        \
  template void copy_or_add<T>(cudaStream_t, const T*, T*, int64_t, bool);                                    \
  template void add_channel_bias<T>(cudaStream_t, T*, const float*, int64_t, int64_t, int64_t, MemoryFormat); \
  template void fill_rows<T>(cudaStream_t, T*, const float*, int64_t, int64_t);                               \
  template void column_sums<T>(cudaStream_t, const T*, int64_t, int64_t, float*);                             \
  template void channel_sums<T>(cudaStream_t, const T*, int64_t, int64_t, int64_t, float*, void*, MemoryFormat);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE

}  // namespace lockstep::cuda
