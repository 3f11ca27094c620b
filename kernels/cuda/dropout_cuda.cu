// Dropout: each thread recomputes its elements' draws; nothing is stored.
// Templates on the stored type T (float or bf16, kernels/stored_type.h).
#include "kernels/cuda/dropout_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/dropout_math.h"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::grid_for;
using detail::kThreads;

template <typename T>
__global__ void dropout_forward_kernel(const T* x, T* y, int64_t n, DropoutKey layer_key,
                                       uint64_t first_index, float p) {
  const uint64_t key = layer_key.get();
  const float scale = dropout_scale(p);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    store(y, i, dropout_apply(load(x, i), dropout_keeps(key, first_index + static_cast<uint64_t>(i), p), scale));
}

template <bool Accumulate, typename T>
__global__ void dropout_backward_kernel(const T* dy, T* dx, int64_t n, DropoutKey layer_key,
                                        uint64_t first_index, float p) {
  const uint64_t key = layer_key.get();
  const float scale = dropout_scale(p);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    float g = Accumulate ? load(dx, i) : 0.0f;
    store_grad(g, dropout_apply(load(dy, i), dropout_keeps(key, first_index + static_cast<uint64_t>(i), p), scale),
               Accumulate);
    store(dx, i, g);
  }
}

}  // namespace

template <typename T>
void dropout_forward(cudaStream_t stream, const T* x, T* y, int64_t n, DropoutKey key, uint64_t first_index, float p) {
  if (n <= 0) return;
  LS_LAUNCH(grid_for(n), kThreads, 0, stream, dropout_forward_kernel<T>)(x, y, n, key, first_index, p);
  LS_CUDA_CHECK_LAUNCH("dropout_forward");
}

template <typename T>
void dropout_backward(cudaStream_t stream, const T* dy, T* dx, int64_t n, DropoutKey key, uint64_t first_index, float p,
                      bool accumulate) {
  if (n <= 0) return;
  if (accumulate) LS_LAUNCH(grid_for(n), kThreads, 0, stream, dropout_backward_kernel<true, T>)(dy, dx, n, key, first_index, p);
  else LS_LAUNCH(grid_for(n), kThreads, 0, stream, dropout_backward_kernel<false, T>)(dy, dx, n, key, first_index, p);
  LS_CUDA_CHECK_LAUNCH("dropout_backward");
}

#define LS_INSTANTIATE(T)                                                                          \
  template void dropout_forward<T>(cudaStream_t, const T*, T*, int64_t, DropoutKey, uint64_t, float); \
  template void dropout_backward<T>(cudaStream_t, const T*, T*, int64_t, DropoutKey, uint64_t, float, bool);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE

}  // namespace lockstep::cuda
