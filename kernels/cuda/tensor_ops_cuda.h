#pragma once
// CUDA launchers of the summing, copying and broadcasting kernels behind the
// add and flatten layers, the bias terms of convolution and linear layers,
// and the local all-reduce of replicas that share one GPU. Each takes the
// stream first and queues its work there. T, the stored type of the
// activations (a, b, y, src, dst, x), is float or bf16_bits
// (kernels/stored_type.h); biases, their gradients and sum_buffers' weight
// gradients are FP32.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/memory_format.h"

namespace lockstep::cuda {

// y = a + b over n elements.
template <typename T> void add(cudaStream_t stream, const T* a, const T* b, T* y, int64_t n);
// dst = src (a stream-ordered copy), or dst += src when `accumulate`; src may be dst.
template <typename T> void copy_or_add(cudaStream_t stream, const T* src, T* dst, int64_t n, bool accumulate);

// y[i, c, s] += bias[c] over y [n, channels, spatial] (a convolution's
// bias), y stored in `format` (NHWC: [n, spatial, channels]).
template <typename T>
void add_channel_bias(cudaStream_t stream, T* y, const float* bias, int64_t n, int64_t channels, int64_t spatial,
                      MemoryFormat format = MemoryFormat::nchw);
// y[i, :] = bias for every row of y [rows, cols] (preloaded before a GEMM that adds onto it).
template <typename T> void fill_rows(cudaStream_t stream, T* y, const float* bias, int64_t rows, int64_t cols);
// out[c] = the sum over rows of x[r, c], x [rows, cols]; in double, rows in order.
template <typename T> void column_sums(cudaStream_t stream, const T* x, int64_t rows, int64_t cols, float* out);

// Device scratch (bytes, 16-byte aligned) channel_sums needs for this shape.
size_t channel_sums_scratch_bytes(int64_t n, int64_t channels, int64_t spatial);
// out[c] = the sum over n and spatial of x [n, channels, spatial] (a
// convolution's bias gradient), summed in double in a fixed order, the same
// bits whichever `format` x is stored in.
template <typename T>
void channel_sums(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial, float* out,
                  void* scratch, MemoryFormat format = MemoryFormat::nchw);

// The most buffers sum_buffers takes in one call.
constexpr int kMaxSummedBuffers = 64;
// dst[i] = srcs[0][i] + srcs[1][i] + ... in that order, for i in [begin, end):
// the same bits whichever rank runs it.
void sum_buffers(cudaStream_t stream, const float* const* srcs, int count, float* dst, int64_t begin, int64_t end);
void sum_buffers(cudaStream_t stream, const double* const* srcs, int count, double* dst, int64_t begin, int64_t end);

}  // namespace lockstep::cuda
