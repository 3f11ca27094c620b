// FP32 <-> bf16 conversions through the load/store trait
// (kernels/stored_type.h), so the rounding is the one every kernel uses, run
// through launch_map (kernels/cuda/stored_vec.cuh): four values per access
// (8-byte bf16, 16-byte float) when the pointers allow it.
#include "kernels/cuda/bf16_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/bf16_math.h"
#include "kernels/cuda/stored_vec.cuh"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::all_vec4_aligned;
using detail::At;
using detail::launch_map;

template <typename Src, typename Dst> struct Convert {
  const Src* src;
  Dst* dst;
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const { at.store(dst, at.load(src)); }
};

struct RoundInPlace {
  float* x;
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const {
    auto v = at.load(x);
    for (int k = 0; k < W; ++k) v.v[k] = ::lockstep::round_to_bf16(v.v[k]);
    at.store(x, v);
  }
};

}  // namespace

template <typename Src, typename Dst> void convert_stored(cudaStream_t stream, const Src* src, Dst* dst, int64_t n) {
  if (n <= 0) return;
  launch_map(stream, n, Convert<Src, Dst>{src, dst}, all_vec4_aligned(src, dst));
  LS_CUDA_CHECK_LAUNCH("convert_stored");
}

void round_to_bf16(cudaStream_t stream, float* x, int64_t n) {
  if (n <= 0) return;
  launch_map(stream, n, RoundInPlace{x}, all_vec4_aligned(x));
  LS_CUDA_CHECK_LAUNCH("round_to_bf16");
}

template void convert_stored<float, bf16_bits>(cudaStream_t, const float*, bf16_bits*, int64_t);
template void convert_stored<bf16_bits, float>(cudaStream_t, const bf16_bits*, float*, int64_t);

}  // namespace lockstep::cuda
