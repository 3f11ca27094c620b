#pragma once
// Pooling on the GPU (the CPU twin: kernels/cpu/pool_cpu.h): max and average
// pooling over windows on cuDNN (pool_cuda.cpp), and our own kernels of
// global average pooling over planes, N * C planes of plane_size values each
// (pool_cuda.cu).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/bf16_math.h"
#include "kernels/cuda/cudnn_plans.h"
#include "kernels/pool_geometry.h"

namespace lockstep {
class CudaLibraries;
}

namespace lockstep::cuda {

// x, y, dy, dx stored as `format`; NHWC needs the channel count (g.planes = N * channels).
void pool2d_forward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const float* x, float* y,
                    MemoryFormat format = MemoryFormat::nchw, int64_t channels = 1);
// dx from dy (cuDNN reads x and y too), written or added when `accumulate`.
void pool2d_backward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const float* x, const float* y,
                     const float* dy, float* dx, bool accumulate, MemoryFormat format = MemoryFormat::nchw,
                     int64_t channels = 1);
// The same with bf16 tensors (raw bf16 bits; cuDNN's PSEUDO_BFLOAT16_CONFIG).
void pool2d_forward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const bf16_bits* x, bf16_bits* y,
                    MemoryFormat format = MemoryFormat::nchw, int64_t channels = 1);
void pool2d_backward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const bf16_bits* x,
                     const bf16_bits* y, const bf16_bits* dy, bf16_bits* dx, bool accumulate,
                     MemoryFormat format = MemoryFormat::nchw, int64_t channels = 1);

// y[p] = the mean of plane p, summed in double in a fixed order. T, the
// stored type of x, y, dy and dx: float or bf16_bits (kernels/stored_type.h).
template <typename T>
void global_avg_pool_forward(cudaStream_t stream, const T* x, T* y, int64_t planes, int64_t plane_size);
// dx[p, i] = dy[p] / plane_size, written or added when `accumulate`.
template <typename T>
void global_avg_pool_backward(cudaStream_t stream, const T* dy, T* dx, int64_t planes, int64_t plane_size,
                              bool accumulate);
// The same over NHWC x and dx [n, plane_size, channels]; y and dy [n, channels]
// lie the same in either format.
template <typename T>
void global_avg_pool_forward_nhwc(cudaStream_t stream, const T* x, T* y, int64_t n, int64_t channels,
                                  int64_t plane_size);
template <typename T>
void global_avg_pool_backward_nhwc(cudaStream_t stream, const T* dy, T* dx, int64_t n, int64_t channels,
                                   int64_t plane_size, bool accumulate);

// Adaptive average pooling (PyTorch's AdaptiveAvgPool2d; the CPU twin
// kernels/cpu/pool_cpu.h) of n x channels planes of in_h x in_w to
// out_h x out_w, the larger and the smaller side each laid out as its
// format says (a 1x1 plane lies alike in both). Forward: a thread an output value,
// summing its window (adaptive_pool_span) in the CPU's order. Backward
// gathers: a thread an input value adds, in the CPU's order, the shares
// dy / window size of the outputs whose windows hold it (no atomics, so the
// result is the CPU's bit for bit in FP32), written or added when `accumulate`.
template <typename T>
void adaptive_avg_pool_forward(cudaStream_t stream, const T* x, T* y, int64_t n, int64_t channels, int64_t in_h,
                               int64_t in_w, int64_t out_h, int64_t out_w, MemoryFormat x_format,
                               MemoryFormat y_format);
template <typename T>
void adaptive_avg_pool_backward(cudaStream_t stream, const T* dy, T* dx, int64_t n, int64_t channels, int64_t in_h,
                                int64_t in_w, int64_t out_h, int64_t out_w, MemoryFormat dx_format,
                                MemoryFormat dy_format, bool accumulate);

}  // namespace lockstep::cuda
