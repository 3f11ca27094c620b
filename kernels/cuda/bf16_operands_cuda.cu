// Grid-stride loops, one element per thread step (kernels/cuda/bf16_operands_cuda.h).
#include "kernels/cuda/bf16_operands_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"

namespace lockstep::cuda {
namespace {

using detail::grid_for;
using detail::kThreads;

template <typename B>
__global__ void broadcast_bias_kernel(const B* bias, bf16_bits* y, int64_t total, int64_t channels, int64_t spatial,
                                      bool channels_last) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t c = channels_last ? i % channels : (i / spatial) % channels;
    if constexpr (sizeof(B) == sizeof(bf16_bits))
      y[i] = bias[c];
    else
      y[i] = float_to_bf16(bias[c]);
  }
}

}  // namespace

void broadcast_bias_bf16(cudaStream_t stream, BiasRef bias, bf16_bits* y, int64_t n, int64_t channels,
                         int64_t spatial, MemoryFormat format) {
  const int64_t total = n * channels * spatial;
  if (total <= 0 || !bias.data) return;
  const bool channels_last = format == MemoryFormat::nhwc || spatial == 1;
  if (bias.bf16)
    LS_LAUNCH(grid_for(total), kThreads, 0, stream, broadcast_bias_kernel<bf16_bits>)(
        static_cast<const bf16_bits*>(bias.data), y, total, channels, spatial, channels_last);
  else
    LS_LAUNCH(grid_for(total), kThreads, 0, stream, broadcast_bias_kernel<float>)(
        static_cast<const float*>(bias.data), y, total, channels, spatial, channels_last);
  LS_CUDA_CHECK_LAUNCH("broadcast_bias_bf16");
}

}  // namespace lockstep::cuda
