#pragma once
// Four consecutive stored values at once (kernels/stored_type.h's load and
// store, vectorised: one 16-byte access for float, one 8-byte access for
// bf16), and the element-wise map built on them (launch_map below).
// Included by .cu files only.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/bf16_math.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/stored_type.h"

namespace lockstep::cuda::detail {

template <typename T> inline bool vec4_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(T)) == 0;
}

// Element-wise maps: one helper for the "vector body + scalar tail, alignment
// checked" pattern, so each kernel writes its per-element math once.
//
// Why: a warp reading one bf16 per thread issues 2-byte loads, 64 bytes per
// warp instruction; four per thread make them 8-byte accesses (16-byte for
// float), four times the bytes per memory instruction and a quarter of the
// instructions for the same bandwidth-bound work. The math per element is
// unchanged (kernels/stored_type.h's load and store on each lane), so the
// vector and scalar paths give the same bits.
//
// An op is a struct with
//   template <int W> __device__ void operator()(At<W> at) const;
// which handles the W (4 or 1) consecutive elements starting at at.first,
// reading and writing its operands through at.load / at.store (stored
// values widened to float, rounded back) or at.raw / at.put_raw (the stored
// values themselves). An op that needs per-thread setup (a hash key read from
// device memory) gives `__device__ void prepare()`, run once per thread.
// Loops over the W lanes have a compile-time trip count, which nvcc unrolls
// fully without a pragma (the emulated build's g++ would warn on one).

// W values of T in one access: alignas makes the compiler emit one 8-byte
// (4 bf16) or 16-byte (4 float) load or store; 4 doubles go as two 16-byte ones.
template <typename T, int W> struct alignas(W * sizeof(T)) Lanes {
  T v[W];
};

template <int W> struct At {
  int64_t first;  // index of the first of the W elements

  __device__ __forceinline__ int64_t index(int k) const { return first + k; }

  template <typename T> __device__ __forceinline__ Lanes<T, W> raw(const T* p) const {
    return *reinterpret_cast<const Lanes<T, W>*>(p + first);
  }
  template <typename T> __device__ __forceinline__ void put_raw(T* p, const Lanes<T, W>& values) const {
    *reinterpret_cast<Lanes<T, W>*>(p + first) = values;
  }
  template <typename T> __device__ __forceinline__ Lanes<float, W> load(const T* p) const {
    const Lanes<T, W> stored = raw(p);
    Lanes<float, W> out;
    for (int k = 0; k < W; ++k) out.v[k] = ::lockstep::load(stored.v, k);
    return out;
  }
  template <typename T> __device__ __forceinline__ void store(T* p, const Lanes<float, W>& values) const {
    Lanes<T, W> stored;
    for (int k = 0; k < W; ++k) ::lockstep::store(stored.v, k, values.v[k]);
    put_raw(p, stored);
  }
};

// Vec: groups of four over a grid-stride loop, then the 1-3 trailing
// elements one per thread (threads 0-2 of the grid); otherwise one element
// per thread step.
template <bool Vec, typename Op> __global__ void __launch_bounds__(kThreads) map_kernel(const Op op, int64_t n) {
  Op f = op;
  if constexpr (requires(Op& o) { o.prepare(); }) f.prepare();
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (Vec) {
    const int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += step) f(At<4>{i * 4});
    for (int64_t e = n4 * 4 + first; e < n; e += step) f(At<1>{e});
  } else {
    for (int64_t i = first; i < n; i += step) f(At<1>{i});
  }
}

// Whether every pointer allows the four-wide access of its own type. Tensors
// may be views at any element offset: one that is not aligned sends the whole
// launch down the scalar path.
template <typename... P> inline bool all_vec4_aligned(const P*... pointers) {
  return (vec4_aligned<P>(pointers) && ...);
}

// Queues op over elements [0, n) (n > 0); `aligned` is all_vec4_aligned of
// the operands the op accesses contiguously. The caller checks the launch
// (LS_CUDA_CHECK_LAUNCH, which takes the kernel's name as a literal).
template <typename Op> void launch_map(cudaStream_t stream, int64_t n, const Op& op, bool aligned) {
  if (aligned) LS_LAUNCH(grid_for((n + 3) / 4), kThreads, 0, stream, map_kernel<true, Op>)(op, n);
  else LS_LAUNCH(grid_for(n), kThreads, 0, stream, map_kernel<false, Op>)(op, n);
}

}  // namespace lockstep::cuda::detail
