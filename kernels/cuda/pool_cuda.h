#pragma once
// CUDA launchers of global average pooling over planes (N * C planes of
// plane_size values each); max and average pooling over windows go through
// cuDNN (runtime/cuda/cudnn_ops.h).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lockstep::cuda {

// y[p] = the mean of plane p, summed in double in a fixed order.
void global_avg_pool_forward(cudaStream_t stream, const float* x, float* y, int64_t planes, int64_t plane_size);
// dx[p, i] = dy[p] / plane_size, written or added when `accumulate`.
void global_avg_pool_backward(cudaStream_t stream, const float* dy, float* dx, int64_t planes, int64_t plane_size,
                              bool accumulate);

}  // namespace lockstep::cuda
