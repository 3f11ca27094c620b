// Element-wise kernels, templates on the stored type T (float or bf16,
// kernels/stored_type.h; math in float): four elements per thread when every
// pointer is aligned for a four-element access (the thread just past the
// last group finishes the 1-3 trailing elements), one element per thread
// otherwise (views at odd offsets).
#include "kernels/cuda/elementwise_cuda.h"

#include <cstdint>

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/stored_vec.cuh"
#include "kernels/elementwise_math.h"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::load4;
using detail::store4;
using detail::vec4_aligned;

constexpr int kThreads = 256;

unsigned blocks_for(int64_t threads) { return static_cast<unsigned>((threads + kThreads - 1) / kThreads); }

// `dx` is the old gradient, read only when accumulating (a written gradient
// may be uninitialised memory).
template <bool Accumulate> __device__ __forceinline__ float backward_one(float y, float dy, float dx) {
  store_grad(dx, ::lockstep::relu_backward(y, dy), Accumulate);
  return dx;
}
template <bool Accumulate, typename T> __device__ __forceinline__ float old_grad(const T* dx, int64_t i) {
  return Accumulate ? load(dx, i) : 0.0f;
}

template <typename T> __global__ void relu_forward_vec(const T* x, T* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t n4 = n / 4;
  if (i < n4) {
    float4 a = load4(x, i);
    float4 r = make_float4(::lockstep::relu_forward(a.x), ::lockstep::relu_forward(a.y),
                           ::lockstep::relu_forward(a.z), ::lockstep::relu_forward(a.w));
    store4(y, i, r);
  } else if (i == n4) {
    for (int64_t e = n4 * 4; e < n; ++e) store(y, e, ::lockstep::relu_forward(load(x, e)));
  }
}

template <typename T> __global__ void relu_forward_scalar(const T* x, T* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) store(y, i, ::lockstep::relu_forward(load(x, i)));
}

template <bool Accumulate, typename T>
__global__ void relu_backward_vec(const T* y, const T* dy, T* dx, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t n4 = n / 4;
  if (i < n4) {
    float4 a = load4(y, i);
    float4 d = load4(dy, i);
    float4 o = Accumulate ? load4(dx, i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    o.x = backward_one<Accumulate>(a.x, d.x, o.x);
    o.y = backward_one<Accumulate>(a.y, d.y, o.y);
    o.z = backward_one<Accumulate>(a.z, d.z, o.z);
    o.w = backward_one<Accumulate>(a.w, d.w, o.w);
    store4(dx, i, o);
  } else if (i == n4) {
    for (int64_t e = n4 * 4; e < n; ++e)
      store(dx, e, backward_one<Accumulate>(load(y, e), load(dy, e), old_grad<Accumulate>(dx, e)));
  }
}

template <bool Accumulate, typename T>
__global__ void relu_backward_scalar(const T* y, const T* dy, T* dx, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) store(dx, i, backward_one<Accumulate>(load(y, i), load(dy, i), old_grad<Accumulate>(dx, i)));
}

template <bool Accumulate, typename T>
void launch_backward(cudaStream_t stream, const T* y, const T* dy, T* dx, int64_t n) {
  if (vec4_aligned<T>(y) && vec4_aligned<T>(dy) && vec4_aligned<T>(dx)) {
    LS_LAUNCH(blocks_for(n / 4 + 1), kThreads, 0, stream, relu_backward_vec<Accumulate, T>)(y, dy, dx, n);
    LS_CUDA_CHECK_LAUNCH("relu_backward_vec");
  } else {
    LS_LAUNCH(blocks_for(n), kThreads, 0, stream, relu_backward_scalar<Accumulate, T>)(y, dy, dx, n);
    LS_CUDA_CHECK_LAUNCH("relu_backward_scalar");
  }
}

}  // namespace

template <typename T> void relu_forward(cudaStream_t stream, const T* x, T* y, int64_t n) {
  if (n <= 0) return;
  if (vec4_aligned<T>(x) && vec4_aligned<T>(y)) {
    LS_LAUNCH(blocks_for(n / 4 + 1), kThreads, 0, stream, relu_forward_vec<T>)(x, y, n);
    LS_CUDA_CHECK_LAUNCH("relu_forward_vec");
  } else {
    LS_LAUNCH(blocks_for(n), kThreads, 0, stream, relu_forward_scalar<T>)(x, y, n);
    LS_CUDA_CHECK_LAUNCH("relu_forward_scalar");
  }
}

template <typename T> void relu_backward(cudaStream_t stream, const T* y, const T* dy, T* dx, int64_t n, bool accumulate) {
  if (n <= 0) return;
  if (accumulate) launch_backward<true>(stream, y, dy, dx, n);
  else launch_backward<false>(stream, y, dy, dx, n);
}

#define LS_INSTANTIATE(T)                                                        \
  template void relu_forward<T>(cudaStream_t, const T*, T*, int64_t);            \
  template void relu_backward<T>(cudaStream_t, const T*, const T*, T*, int64_t, bool);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE

}  // namespace lockstep::cuda
