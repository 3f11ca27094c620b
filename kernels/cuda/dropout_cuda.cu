// Dropout: each thread recomputes its elements' draws; nothing is stored.
#include "kernels/cuda/dropout_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/dropout_math.h"

namespace lockstep::cuda {
namespace {

using detail::grid_for;
using detail::kThreads;

__global__ void dropout_forward_kernel(const float* x, float* y, int64_t n, DropoutKey layer_key,
                                       uint64_t first_index, float p) {
  const uint64_t key = layer_key.get();
  const float scale = dropout_scale(p);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    y[i] = dropout_apply(x[i], dropout_keeps(key, first_index + static_cast<uint64_t>(i), p), scale);
}

template <bool Accumulate>
__global__ void dropout_backward_kernel(const float* dy, float* dx, int64_t n, DropoutKey layer_key,
                                        uint64_t first_index, float p) {
  const uint64_t key = layer_key.get();
  const float scale = dropout_scale(p);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    float g = Accumulate ? dx[i] : 0.0f;
    store_grad(g, dropout_apply(dy[i], dropout_keeps(key, first_index + static_cast<uint64_t>(i), p), scale),
               Accumulate);
    dx[i] = g;
  }
}

}  // namespace

void dropout_forward(cudaStream_t stream, const float* x, float* y, int64_t n, DropoutKey key, uint64_t first_index,
                     float p) {
  if (n <= 0) return;
  LS_LAUNCH(grid_for(n), kThreads, 0, stream, dropout_forward_kernel)(x, y, n, key, first_index, p);
  LS_CUDA_CHECK_LAUNCH("dropout_forward");
}

void dropout_backward(cudaStream_t stream, const float* dy, float* dx, int64_t n, DropoutKey key, uint64_t first_index,
                      float p, bool accumulate) {
  if (n <= 0) return;
  if (accumulate) LS_LAUNCH(grid_for(n), kThreads, 0, stream, dropout_backward_kernel<true>)(dy, dx, n, key, first_index, p);
  else LS_LAUNCH(grid_for(n), kThreads, 0, stream, dropout_backward_kernel<false>)(dy, dx, n, key, first_index, p);
  LS_CUDA_CHECK_LAUNCH("dropout_backward");
}

}  // namespace lockstep::cuda
