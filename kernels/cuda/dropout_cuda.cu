// Dropout: each thread recomputes its elements' draws; nothing is stored.
// Templates on the stored type T (float or bf16, kernels/stored_type.h), run
// through launch_map (kernels/cuda/stored_vec.cuh): four elements per 8-byte
// (bf16) or 16-byte (float) access when the pointers allow it.
#include "kernels/cuda/dropout_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/stored_vec.cuh"
#include "kernels/dropout_math.h"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::all_vec4_aligned;
using detail::At;
using detail::launch_map;

// The draws' key and the scale, once per thread (the key may be built from
// the step index in device memory).
struct DropoutDraws {
  DropoutKey layer_key;
  uint64_t first_index;
  float p;
  uint64_t key = 0;
  float scale = 0.0f;
  __device__ __forceinline__ void prepare() {
    key = layer_key.get();
    scale = dropout_scale(p);
  }
  __device__ __forceinline__ float apply(float x, int64_t i) const {
    return dropout_apply(x, dropout_keeps(key, first_index + static_cast<uint64_t>(i), p), scale);
  }
};

template <typename T> struct DropoutForward {
  const T* x;
  T* y;
  DropoutDraws draws;
  __device__ __forceinline__ void prepare() { draws.prepare(); }
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const {
    auto v = at.load(x);
    for (int k = 0; k < W; ++k) v.v[k] = draws.apply(v.v[k], at.index(k));
    at.store(y, v);
  }
};

// `dx` is the old gradient, read only when accumulating.
template <bool Accumulate, typename T> struct DropoutBackward {
  const T* dy;
  T* dx;
  DropoutDraws draws;
  __device__ __forceinline__ void prepare() { draws.prepare(); }
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const {
    const auto d = at.load(dy);
    detail::Lanes<float, W> g{};
    if constexpr (Accumulate) g = at.load(dx);
    for (int k = 0; k < W; ++k) store_grad(g.v[k], draws.apply(d.v[k], at.index(k)), Accumulate);
    at.store(dx, g);
  }
};

}  // namespace

template <typename T>
void dropout_forward(cudaStream_t stream, const T* x, T* y, int64_t n, DropoutKey key, uint64_t first_index, float p) {
  if (n <= 0) return;
  launch_map(stream, n, DropoutForward<T>{x, y, {key, first_index, p}}, all_vec4_aligned(x, y));
  LS_CUDA_CHECK_LAUNCH("dropout_forward");
}

template <typename T>
void dropout_backward(cudaStream_t stream, const T* dy, T* dx, int64_t n, DropoutKey key, uint64_t first_index, float p,
                      bool accumulate) {
  if (n <= 0) return;
  const DropoutDraws draws{key, first_index, p};
  const bool aligned = all_vec4_aligned(dy, dx);
  if (accumulate) launch_map(stream, n, DropoutBackward<true, T>{dy, dx, draws}, aligned);
  else launch_map(stream, n, DropoutBackward<false, T>{dy, dx, draws}, aligned);
  LS_CUDA_CHECK_LAUNCH("dropout_backward");
}

#define LS_INSTANTIATE(T)                                                                          \
  template void dropout_forward<T>(cudaStream_t, const T*, T*, int64_t, DropoutKey, uint64_t, float); \
  template void dropout_backward<T>(cudaStream_t, const T*, T*, int64_t, DropoutKey, uint64_t, float, bool);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE

}  // namespace lockstep::cuda
