// Global average pooling: a warp per plane in forward (lanes stride over the
// plane, then a fixed shuffle tree); in backward, groups of threads sized to
// the plane walk whole planes.
#include "kernels/cuda/pool_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/elementwise_math.h"

namespace lockstep::cuda {
namespace {

using detail::grid_for;
using detail::kThreads;
constexpr int kWarps = kThreads / 32;

__global__ void global_avg_forward_kernel(const float* x, float* y, int64_t planes, int64_t plane_size) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; p < planes; p += warps) {
    const float* plane = x + p * plane_size;
    double sum = 0.0;
    for (int64_t i = lane; i < plane_size; i += 32) sum += plane[i];
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[p] = static_cast<float>(sum / static_cast<double>(plane_size));
  }
}

template <bool Accumulate>
__global__ void global_avg_backward_kernel(const float* dy, float* dx, int64_t planes, int64_t plane_size, int log2) {
  const float inv_size = 1.0f / static_cast<float>(plane_size);
  detail::for_each_in_planes(planes, plane_size, log2, [&](int64_t p, int64_t i) {
    float g = Accumulate ? dx[i] : 0.0f;
    store_grad(g, dy[p] * inv_size, Accumulate);
    dx[i] = g;
  });
}

}  // namespace

void global_avg_pool_forward(cudaStream_t stream, const float* x, float* y, int64_t planes, int64_t plane_size) {
  if (planes <= 0 || plane_size <= 0) return;
  int64_t blocks = (planes + kWarps - 1) / kWarps;
  LS_LAUNCH(grid_for(blocks * kThreads), kThreads, 0, stream, global_avg_forward_kernel)(x, y, planes, plane_size);
  LS_CUDA_CHECK_LAUNCH("global_avg_pool_forward");
}

void global_avg_pool_backward(cudaStream_t stream, const float* dy, float* dx, int64_t planes, int64_t plane_size,
                              bool accumulate) {
  if (planes <= 0 || plane_size <= 0) return;
  const int log2 = detail::plane_group_log2(plane_size);
  const unsigned grid = detail::plane_grid(planes, log2);
  if (accumulate) LS_LAUNCH(grid, kThreads, 0, stream, global_avg_backward_kernel<true>)(dy, dx, planes, plane_size, log2);
  else LS_LAUNCH(grid, kThreads, 0, stream, global_avg_backward_kernel<false>)(dy, dx, planes, plane_size, log2);
  LS_CUDA_CHECK_LAUNCH("global_avg_pool_backward");
}

}  // namespace lockstep::cuda
