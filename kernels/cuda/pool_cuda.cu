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

#define LS_INSTANTIATE(T)                                                                            \
  template void global_avg_pool_forward<T>(cudaStream_t, const T*, T*, int64_t, int64_t);               \
  template void global_avg_pool_backward<T>(cudaStream_t, const T*, T*, int64_t, int64_t, bool);        \
  template void global_avg_pool_forward_nhwc<T>(cudaStream_t, const T*, T*, int64_t, int64_t, int64_t); \
  template void global_avg_pool_backward_nhwc<T>(cudaStream_t, const T*, T*, int64_t, int64_t, int64_t, bool);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE

}  // namespace lockstep::cuda
