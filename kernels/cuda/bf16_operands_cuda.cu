// The bias broadcast through launch_map (kernels/cuda/stored_vec.cuh): the
// bias reads are gathers of a few cached values, the bf16 stores go four at a
// time (8 bytes) when y is aligned for it (kernels/cuda/bf16_operands_cuda.h).
#include "kernels/cuda/bf16_operands_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/stored_vec.cuh"

namespace lockstep::cuda {
namespace {

template <typename B> struct BroadcastBias {
  const B* bias;
  bf16_bits* y;
  int64_t channels;
  int64_t spatial;
  bool channels_last;
  template <int W> __device__ __forceinline__ void operator()(detail::At<W> at) const {
    detail::Lanes<bf16_bits, W> out;
    for (int k = 0; k < W; ++k) {
      const int64_t i = at.index(k);
      const int64_t c = channels_last ? i % channels : (i / spatial) % channels;
      if constexpr (sizeof(B) == sizeof(bf16_bits))
        out.v[k] = bias[c];  // the bits as they are
      else
        out.v[k] = float_to_bf16(bias[c]);
    }
    at.put_raw(y, out);
  }
};

}  // namespace

void broadcast_bias_bf16(cudaStream_t stream, BiasRef bias, bf16_bits* y, int64_t n, int64_t channels,
                         int64_t spatial, MemoryFormat format) {
  const int64_t total = n * channels * spatial;
  if (total <= 0 || !bias.data) return;
  const bool channels_last = format == MemoryFormat::nhwc || spatial == 1;
  const bool aligned = detail::all_vec4_aligned(y);
  if (bias.bf16)
    detail::launch_map(stream, total,
               BroadcastBias<bf16_bits>{static_cast<const bf16_bits*>(bias.data), y, channels, spatial, channels_last},
               aligned);
  else
    detail::launch_map(stream, total,
               BroadcastBias<float>{static_cast<const float*>(bias.data), y, channels, spatial, channels_last},
               aligned);
  LS_CUDA_CHECK_LAUNCH("broadcast_bias_bf16");
}

}  // namespace lockstep::cuda
