// Element-wise sums and copies and the row bias fill through launch_map
// (kernels/cuda/stored_vec.cuh: 8- or 16-byte accesses of four elements when
// every pointer is aligned for it, one element otherwise), the channel bias
// and fixed-order sums.
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

using detail::all_vec4_aligned;
using detail::At;
using detail::grid_for;
using detail::kThreads;
using detail::launch_map;

template <typename T> struct Add {
  const T* a;
  const T* b;
  T* y;
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const {
    auto s = at.load(a);
    const auto t = at.load(b);
    for (int k = 0; k < W; ++k) s.v[k] += t.v[k];
    at.store(y, s);
  }
};

// y[i] = bias[i % cols]: the bias reads are gathers (cached, `cols` values),
// the stores of y four at a time.
template <typename T> struct FillRows {
  T* y;
  const float* bias;
  int64_t cols;
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const {
    detail::Lanes<float, W> v;
    for (int k = 0; k < W; ++k) v.v[k] = bias[at.index(k) % cols];
    at.store(y, v);
  }
};

template <typename T> __global__ void add_channel_bias_kernel(T* y, const float* bias, channel_reduce::Layout l) {
  channel_reduce::for_each_value(l, [&](uint32_t c, int64_t i) { store(y, i, load(y, i) + bias[c]); });
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

// Sums in rank order in T (float or double) as before; srcs and dst are
// already offset to the range's first element.
template <typename T> struct SumBuffers {
  SourceList<T> srcs;
  int count;
  T* dst;
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const {
    detail::Lanes<T, W> sum = at.raw(srcs.at[0]);
    for (int r = 1; r < count; ++r) {
      const detail::Lanes<T, W> term = at.raw(srcs.at[r]);
      for (int k = 0; k < W; ++k) sum.v[k] += term.v[k];
    }
    at.put_raw(dst, sum);
  }
};

}  // namespace

template <typename T> void add(cudaStream_t stream, const T* a, const T* b, T* y, int64_t n) {
  if (n <= 0) return;
  launch_map(stream, n, Add<T>{a, b, y}, all_vec4_aligned(a, b, y));
  LS_CUDA_CHECK_LAUNCH("add");
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
  launch_map(stream, total, FillRows<T>{y, bias, cols}, all_vec4_aligned(y));
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
  bool aligned = all_vec4_aligned(dst + begin);
  for (int r = 0; r < count; ++r) {
    list.at[r] = srcs[r] + begin;
    aligned = aligned && all_vec4_aligned(list.at[r]);
  }
  launch_map(stream, end - begin, SumBuffers<T>{list, count, dst + begin}, aligned);
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
