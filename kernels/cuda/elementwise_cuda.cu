// Element-wise kernels, templates on the stored type T (float or bf16,
// kernels/stored_type.h; math in float), run through launch_map
// (kernels/cuda/stored_vec.cuh): four elements per access when every pointer
// is aligned for it (8-byte bf16, 16-byte float transactions), one element
// per thread step otherwise (views at odd offsets).
#include "kernels/cuda/elementwise_cuda.h"

#include <cstdint>

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/stored_vec.cuh"
#include "kernels/elementwise_math.h"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::all_vec4_aligned;
using detail::At;
using detail::launch_map;

template <typename T> struct ReluForward {
  const T* x;
  T* y;
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const {
    auto v = at.load(x);
    for (int k = 0; k < W; ++k) v.v[k] = ::lockstep::relu_forward(v.v[k]);
    at.store(y, v);
  }
};

// `dx` is the old gradient, read only when accumulating (a written gradient
// may be uninitialised memory).
template <bool Accumulate, typename T> struct ReluBackward {
  const T* y;
  const T* dy;
  T* dx;
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const {
    const auto a = at.load(y), d = at.load(dy);
    detail::Lanes<float, W> g{};
    if constexpr (Accumulate) g = at.load(dx);
    for (int k = 0; k < W; ++k) store_grad(g.v[k], ::lockstep::relu_backward(a.v[k], d.v[k]), Accumulate);
    at.store(dx, g);
  }
};

}  // namespace

template <typename T> void relu_forward(cudaStream_t stream, const T* x, T* y, int64_t n) {
  if (n <= 0) return;
  launch_map(stream, n, ReluForward<T>{x, y}, all_vec4_aligned(x, y));
  LS_CUDA_CHECK_LAUNCH("relu_forward");
}

template <typename T> void relu_backward(cudaStream_t stream, const T* y, const T* dy, T* dx, int64_t n, bool accumulate) {
  if (n <= 0) return;
  const bool aligned = all_vec4_aligned(y, dy, dx);
  if (accumulate) launch_map(stream, n, ReluBackward<true, T>{y, dy, dx}, aligned);
  else launch_map(stream, n, ReluBackward<false, T>{y, dy, dx}, aligned);
  LS_CUDA_CHECK_LAUNCH("relu_backward");
}

#define LS_INSTANTIATE(T)                                                        \
  template void relu_forward<T>(cudaStream_t, const T*, T*, int64_t);            \
  template void relu_backward<T>(cudaStream_t, const T*, const T*, T*, int64_t, bool);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE

}  // namespace lockstep::cuda
