// Adaptive average pooling: a thread per output (forward) or per input
// (backward, gathering), in the CPU loop's summation order.
//
// Global average pooling: a warp per plane in forward (lanes stride over the
// plane, then a fixed shuffle tree); in backward, groups of threads sized to
// the plane walk whole planes. NHWC (channels last): a thread per (sample,
// channel) sums its pixels in order in forward, so a warp reads 32 adjacent
// channels of a pixel at once; backward walks the flat order. Templates on
// the stored type T of x, y, dy and dx (float or bf16, kernels/stored_type.h):
// sums in double, the mean rounded once as it is stored.
#include "kernels/cuda/pool_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/elementwise_math.h"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::grid_for;
using detail::kThreads;
constexpr int kWarps = kThreads / 32;

template <typename T>
__global__ void global_avg_forward_kernel(const T* x, T* y, int64_t planes, int64_t plane_size) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; p < planes; p += warps) {
    const T* plane = x + p * plane_size;
    double sum = 0.0;
    for (int64_t i = lane; i < plane_size; i += 32) sum += load(plane, i);
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) store(y, p, static_cast<float>(sum / static_cast<double>(plane_size)));
  }
}

template <bool Accumulate, typename T>
__global__ void global_avg_backward_kernel(const T* dy, T* dx, int64_t planes, int64_t plane_size, int log2) {
  const float inv_size = 1.0f / static_cast<float>(plane_size);
  detail::for_each_in_planes(planes, plane_size, log2, [&](int64_t p, int64_t i) {
    float g = Accumulate ? load(dx, i) : 0.0f;
    store_grad(g, load(dy, p) * inv_size, Accumulate);
    store(dx, i, g);
  });
}

template <typename T>
__global__ void global_avg_forward_nhwc(const T* x, T* y, int64_t n, int64_t channels, int64_t plane_size) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < n * channels; p += step) {
    const int64_t sample = p / channels, c = p % channels;
    const T* first = x + sample * plane_size * channels + c;
    double sum = 0.0;
    for (int64_t i = 0; i < plane_size; ++i) sum += load(first, i * channels);
    store(y, p, static_cast<float>(sum / static_cast<double>(plane_size)));
  }
}

template <bool Accumulate, typename T>
__global__ void global_avg_backward_nhwc(const T* dy, T* dx, int64_t n, int64_t channels, int64_t plane_size) {
  const float inv_size = 1.0f / static_cast<float>(plane_size);
  const int64_t total = n * plane_size * channels, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t sample = i / (plane_size * channels), c = i % channels;
    float g = Accumulate ? load(dx, i) : 0.0f;
    store_grad(g, load(dy, sample * channels + c) * inv_size, Accumulate);
    store(dx, i, g);
  }
}

}  // namespace

template <typename T>
void global_avg_pool_forward_nhwc(cudaStream_t stream, const T* x, T* y, int64_t n, int64_t channels,
                                  int64_t plane_size) {
  if (n * channels <= 0 || plane_size <= 0) return;
  LS_LAUNCH(grid_for(n * channels), kThreads, 0, stream, global_avg_forward_nhwc<T>)(x, y, n, channels, plane_size);
  LS_CUDA_CHECK_LAUNCH("global_avg_pool_forward_nhwc");
}

template <typename T>
void global_avg_pool_backward_nhwc(cudaStream_t stream, const T* dy, T* dx, int64_t n, int64_t channels,
                                   int64_t plane_size, bool accumulate) {
  if (n * channels <= 0 || plane_size <= 0) return;
  const unsigned grid = grid_for(n * channels * plane_size);
  if (accumulate)
    LS_LAUNCH(grid, kThreads, 0, stream, global_avg_backward_nhwc<true, T>)(dy, dx, n, channels, plane_size);
  else
    LS_LAUNCH(grid, kThreads, 0, stream, global_avg_backward_nhwc<false, T>)(dy, dx, n, channels, plane_size);
  LS_CUDA_CHECK_LAUNCH("global_avg_pool_backward_nhwc");
}

template <typename T>
void global_avg_pool_forward(cudaStream_t stream, const T* x, T* y, int64_t planes, int64_t plane_size) {
  if (planes <= 0 || plane_size <= 0) return;
  int64_t blocks = (planes + kWarps - 1) / kWarps;
  LS_LAUNCH(grid_for(blocks * kThreads), kThreads, 0, stream, global_avg_forward_kernel<T>)(x, y, planes, plane_size);
  LS_CUDA_CHECK_LAUNCH("global_avg_pool_forward");
}

template <typename T>
void global_avg_pool_backward(cudaStream_t stream, const T* dy, T* dx, int64_t planes, int64_t plane_size,
                              bool accumulate) {
  if (planes <= 0 || plane_size <= 0) return;
  const int log2 = detail::plane_group_log2(plane_size);
  const unsigned grid = detail::plane_grid(planes, log2);
  if (accumulate) LS_LAUNCH(grid, kThreads, 0, stream, global_avg_backward_kernel<true, T>)(dy, dx, planes, plane_size, log2);
  else LS_LAUNCH(grid, kThreads, 0, stream, global_avg_backward_kernel<false, T>)(dy, dx, planes, plane_size, log2);
  LS_CUDA_CHECK_LAUNCH("global_avg_pool_backward");
}

namespace {

// Where value (sample, c, h, w) of an n x channels x height x width batch lies.
struct Layout {
  int64_t channels, height, width;
  bool nhwc;
  __device__ int64_t at(int64_t sample, int64_t c, int64_t h, int64_t w) const {
    return nhwc ? ((sample * height + h) * width + w) * channels + c : ((sample * channels + c) * height + h) * width + w;
  }
  // The coordinates of flat index i, the fastest-moving one last in memory
  // (w in NCHW, c in NHWC), so neighbouring threads touch neighbouring values.
  __device__ void coordinates(int64_t i, int64_t& sample, int64_t& c, int64_t& h, int64_t& w) const {
    if (nhwc) {
      c = i % channels;
      i /= channels;
      w = i % width;
      i /= width;
      h = i % height;
      sample = i / height;
    } else {
      w = i % width;
      i /= width;
      h = i % height;
      i /= height;
      c = i % channels;
      sample = i / channels;
    }
  }
};

template <typename T>
__global__ void adaptive_avg_forward_kernel(const T* x, T* y, int64_t total, Layout in, Layout out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t sample, c, oh, ow;
    out.coordinates(i, sample, c, oh, ow);
    const PoolSpan rows = adaptive_pool_span(oh, in.height, out.height);
    const PoolSpan cols = adaptive_pool_span(ow, in.width, out.width);
    float sum = 0.0f;
    for (int64_t h = rows.begin; h < rows.end; ++h)
      for (int64_t w = cols.begin; w < cols.end; ++w) sum += load(x, in.at(sample, c, h, w));
    store(y, i, sum / static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin)));
  }
}

// The outputs along one axis whose spans hold input position `at`: from
// floor(at * out / in) on, while a span starts at or before it.
__device__ void outputs_holding(int64_t at, int64_t in, int64_t out, int64_t& first, int64_t& last) {
  first = at * out / in;
  last = first;
  while (last + 1 < out && adaptive_pool_span(last + 1, in, out).begin <= at) ++last;
}

template <bool Accumulate, typename T>
__global__ void adaptive_avg_backward_kernel(const T* dy, T* dx, int64_t total, Layout in, Layout out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t sample, c, h, w;
    in.coordinates(i, sample, c, h, w);
    int64_t oh_first, oh_last, ow_first, ow_last;
    outputs_holding(h, in.height, out.height, oh_first, oh_last);
    outputs_holding(w, in.width, out.width, ow_first, ow_last);
    float g = Accumulate ? load(dx, i) : 0.0f;
    for (int64_t oh = oh_first; oh <= oh_last; ++oh) {
      const PoolSpan rows = adaptive_pool_span(oh, in.height, out.height);
      for (int64_t ow = ow_first; ow <= ow_last; ++ow) {
        const PoolSpan cols = adaptive_pool_span(ow, in.width, out.width);
        g += load(dy, out.at(sample, c, oh, ow)) / static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin));
      }
    }
    store(dx, i, g);
  }
}

}  // namespace

template <typename T>
void adaptive_avg_pool_forward(cudaStream_t stream, const T* x, T* y, int64_t n, int64_t channels, int64_t in_h,
                               int64_t in_w, int64_t out_h, int64_t out_w, MemoryFormat x_format,
                               MemoryFormat y_format) {
  const int64_t total = n * channels * out_h * out_w;
  if (total <= 0) return;
  const Layout in{channels, in_h, in_w, x_format == MemoryFormat::nhwc};
  const Layout out{channels, out_h, out_w, y_format == MemoryFormat::nhwc};
  LS_LAUNCH(grid_for(total), kThreads, 0, stream, adaptive_avg_forward_kernel<T>)(x, y, total, in, out);
  LS_CUDA_CHECK_LAUNCH("adaptive_avg_pool_forward");
}

template <typename T>
void adaptive_avg_pool_backward(cudaStream_t stream, const T* dy, T* dx, int64_t n, int64_t channels, int64_t in_h,
                                int64_t in_w, int64_t out_h, int64_t out_w, MemoryFormat dx_format,
                                MemoryFormat dy_format, bool accumulate) {
  const int64_t total = n * channels * in_h * in_w;
  if (total <= 0) return;
  const Layout in{channels, in_h, in_w, dx_format == MemoryFormat::nhwc};
  const Layout out{channels, out_h, out_w, dy_format == MemoryFormat::nhwc};
  if (accumulate)
    LS_LAUNCH(grid_for(total), kThreads, 0, stream, adaptive_avg_backward_kernel<true, T>)(dy, dx, total, in, out);
  else
    LS_LAUNCH(grid_for(total), kThreads, 0, stream, adaptive_avg_backward_kernel<false, T>)(dy, dx, total, in, out);
  LS_CUDA_CHECK_LAUNCH("adaptive_avg_pool_backward");
}

#define LS_INSTANTIATE(T)                                                                            \
  template void global_avg_pool_forward<T>(cudaStream_t, const T*, T*, int64_t, int64_t);               \
  template void global_avg_pool_backward<T>(cudaStream_t, const T*, T*, int64_t, int64_t, bool);        \
  template void global_avg_pool_forward_nhwc<T>(cudaStream_t, const T*, T*, int64_t, int64_t, int64_t); \
  template void global_avg_pool_backward_nhwc<T>(cudaStream_t, const T*, T*, int64_t, int64_t, int64_t, bool); \
  template void adaptive_avg_pool_forward<T>(cudaStream_t, const T*, T*, int64_t, int64_t, int64_t, int64_t,  \
                                             int64_t, int64_t, MemoryFormat, MemoryFormat);                    \
  template void adaptive_avg_pool_backward<T>(cudaStream_t, const T*, T*, int64_t, int64_t, int64_t, int64_t, \
                                              int64_t, int64_t, MemoryFormat, MemoryFormat, bool);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE

}  // namespace lockstep::cuda
