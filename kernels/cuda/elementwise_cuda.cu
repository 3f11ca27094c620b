// Element-wise kernels: one float4 per thread when every pointer is 16-byte
// aligned (the thread just past the last float4 finishes the 1-3 trailing
// elements), one float per thread otherwise (views at odd offsets).
#include "kernels/cuda/elementwise_cuda.h"

#include <cstdint>

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/elementwise_math.h"

namespace lockstep::cuda {
namespace {

constexpr int kThreads = 256;

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

unsigned blocks_for(int64_t threads) { return static_cast<unsigned>((threads + kThreads - 1) / kThreads); }

// `dx` is the old gradient, read only when accumulating (a written gradient
// may be uninitialised memory).
template <bool Accumulate> __device__ __forceinline__ float backward_one(float y, float dy, float dx) {
  store_grad(dx, ::lockstep::relu_backward(y, dy), Accumulate);
  return dx;
}
template <bool Accumulate> __device__ __forceinline__ float old_grad(const float* dx, int64_t i) {
  return Accumulate ? dx[i] : 0.0f;
}

__global__ void relu_forward_vec(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t n4 = n / 4;
  if (i < n4) {
    float4 a = reinterpret_cast<const float4*>(x)[i];
    float4 r = make_float4(::lockstep::relu_forward(a.x), ::lockstep::relu_forward(a.y),
                           ::lockstep::relu_forward(a.z), ::lockstep::relu_forward(a.w));
    reinterpret_cast<float4*>(y)[i] = r;
  } else if (i == n4) {
    for (int64_t e = n4 * 4; e < n; ++e) y[e] = ::lockstep::relu_forward(x[e]);
  }
}

__global__ void relu_forward_scalar(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = ::lockstep::relu_forward(x[i]);
}

template <bool Accumulate>
__global__ void relu_backward_vec(const float* y, const float* dy, float* dx, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t n4 = n / 4;
  if (i < n4) {
    float4 a = reinterpret_cast<const float4*>(y)[i];
    float4 d = reinterpret_cast<const float4*>(dy)[i];
    float4 o = Accumulate ? reinterpret_cast<const float4*>(dx)[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    o.x = backward_one<Accumulate>(a.x, d.x, o.x);
    o.y = backward_one<Accumulate>(a.y, d.y, o.y);
    o.z = backward_one<Accumulate>(a.z, d.z, o.z);
    o.w = backward_one<Accumulate>(a.w, d.w, o.w);
    reinterpret_cast<float4*>(dx)[i] = o;
  } else if (i == n4) {
    for (int64_t e = n4 * 4; e < n; ++e) dx[e] = backward_one<Accumulate>(y[e], dy[e], old_grad<Accumulate>(dx, e));
  }
}

template <bool Accumulate>
__global__ void relu_backward_scalar(const float* y, const float* dy, float* dx, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dx[i] = backward_one<Accumulate>(y[i], dy[i], old_grad<Accumulate>(dx, i));
}

template <bool Accumulate>
void launch_backward(cudaStream_t stream, const float* y, const float* dy, float* dx, int64_t n) {
  if (aligned16(y) && aligned16(dy) && aligned16(dx)) {
    LS_LAUNCH(blocks_for(n / 4 + 1), kThreads, 0, stream, relu_backward_vec<Accumulate>)(y, dy, dx, n);
    LS_CUDA_CHECK_LAUNCH("relu_backward_vec");
  } else {
    LS_LAUNCH(blocks_for(n), kThreads, 0, stream, relu_backward_scalar<Accumulate>)(y, dy, dx, n);
    LS_CUDA_CHECK_LAUNCH("relu_backward_scalar");
  }
}

}  // namespace

void relu_forward(cudaStream_t stream, const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  if (aligned16(x) && aligned16(y)) {
    LS_LAUNCH(blocks_for(n / 4 + 1), kThreads, 0, stream, relu_forward_vec)(x, y, n);
    LS_CUDA_CHECK_LAUNCH("relu_forward_vec");
  } else {
    LS_LAUNCH(blocks_for(n), kThreads, 0, stream, relu_forward_scalar)(x, y, n);
    LS_CUDA_CHECK_LAUNCH("relu_forward_scalar");
  }
}

void relu_backward(cudaStream_t stream, const float* y, const float* dy, float* dx, int64_t n, bool accumulate) {
  if (n <= 0) return;
  if (accumulate) launch_backward<true>(stream, y, dy, dx, n);
  else launch_backward<false>(stream, y, dy, dx, n);
}

}  // namespace lockstep::cuda
