// FP32 <-> bf16 conversions: a grid-stride loop through the load/store trait
// (kernels/stored_type.h), so the rounding is the one every kernel uses.
#include "kernels/cuda/bf16_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/bf16_math.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::grid_for;
using detail::kThreads;

template <typename Src, typename Dst> __global__ void convert_kernel(const Src* src, Dst* dst, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    store(dst, i, load(src, i));
}

__global__ void round_kernel(float* x, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    x[i] = ::lockstep::round_to_bf16(x[i]);
}

}  // namespace

template <typename Src, typename Dst> void convert_stored(cudaStream_t stream, const Src* src, Dst* dst, int64_t n) {
  if (n <= 0) return;
  LS_LAUNCH(grid_for(n), kThreads, 0, stream, convert_kernel<Src, Dst>)(src, dst, n);
  LS_CUDA_CHECK_LAUNCH("convert_stored");
}

void round_to_bf16(cudaStream_t stream, float* x, int64_t n) {
  if (n <= 0) return;
  LS_LAUNCH(grid_for(n), kThreads, 0, stream, round_kernel)(x, n);
  LS_CUDA_CHECK_LAUNCH("round_to_bf16");
}

template void convert_stored<float, bf16_bits>(cudaStream_t, const float*, bf16_bits*, int64_t);
template void convert_stored<bf16_bits, float>(cudaStream_t, const bf16_bits*, float*, int64_t);

}  // namespace lockstep::cuda
