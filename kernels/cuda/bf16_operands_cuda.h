#pragma once
// The kernel the bf16 library calls (conv_cuda, linear_cuda) need around
// cuDNN and cuBLAS: a bias broadcast into a bf16 output before the library
// blends its product onto it (beta = 1, so each output is rounded to bf16
// once, after the bias is added in FP32). (cuDNN's bf16 dw is widened into
// the FP32 gradient by convert_stored, kernels/cuda/bf16_cuda.h.)
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/bf16_math.h"
#include "kernels/memory_format.h"

namespace lockstep::cuda {

// A bias of either storage type: the FP32 master bias, or its bf16 copy.
struct BiasRef {
  const void* data = nullptr;  // null: no bias
  bool bf16 = false;
};

// y[i, c, s] = bias[c] rounded to bf16 (exact for a bf16 bias), for y of n
// samples, `channels` channels and `spatial` pixels each, stored as `format`
// (rows of a matrix are nhwc with spatial 1).
void broadcast_bias_bf16(cudaStream_t stream, BiasRef bias, bf16_bits* y, int64_t n, int64_t channels,
                         int64_t spatial, MemoryFormat format);

}  // namespace lockstep::cuda
