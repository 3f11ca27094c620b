// Augmentation: one thread per output value (four consecutive ones when the
// output allows a vector store), each working out its sample, channel, row
// and column, and its resize taps on the spot; nothing is staged in shared
// memory, since every value reads at most four bytes of its own sample.
#include "kernels/cuda/augment_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/augment_math.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/trivial_augment_math.h"
#include "kernels/cuda/stored_vec.cuh"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::all_vec4_aligned;
using detail::At;
using detail::Lanes;
using detail::launch_map;

template <typename T> struct AugmentValues {
  const uint8_t* in;
  T* out;
  const AugmentDraw* draws;
  const float* mean;
  const float* stddev;
  int64_t channels, height, width, crop_padding;

  __device__ __forceinline__ float value(int64_t i) const {
    const int64_t plane = height * width;
    const int64_t planes = i / plane, pixel = i - planes * plane;
    const int64_t sample = planes / channels, c = planes - sample * channels;
    const float x = augment_pixel(in + planes * plane, height, width, crop_padding, draws[sample], pixel / width,
                                  pixel % width);
    return augment_normalize(x, mean[c], augment_inv_std(stddev[c]));
  }
  template <int W> __device__ __forceinline__ void operator()(At<W> at) const {
    Lanes<float, W> values;
    for (int k = 0; k < W; ++k) values.v[k] = value(at.index(k));
    at.store(out, values);
  }
};

// One block per plane (sample, channel), the grid striding over planes. The
// operation is the sample's, so every branch around a barrier is the
// block's. Histogram counts and the grey sum are integers: the atomics'
// order cannot change them.
template <typename T>
__global__ void trivial_kernel(const uint8_t* in, T* out, const AugmentDraw* draws, const float* mean,
                               const float* stddev, int64_t planes, int64_t channels, int64_t height, int64_t width,
                               int64_t crop_padding) {
  __shared__ uint32_t histogram[256];
  __shared__ unsigned long long gray_sum;
  __shared__ uint8_t table[256];
  const int64_t plane = height * width;
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const int64_t sample = p / channels, c = p - sample * channels;
    const AugmentDraw& draw = draws[sample];
    const TrivialSource source{in + sample * channels * plane, channels, height, width, crop_padding, &draw};
    const int32_t op = draw.trivial_op;
    if (trivial_uses_table(op)) {
      for (int i = threadIdx.x; i < 256; i += blockDim.x) histogram[i] = 0;
      if (threadIdx.x == 0) gray_sum = 0;
      __syncthreads();
      unsigned long long gray = 0;
      for (int64_t j = threadIdx.x; j < plane; j += blockDim.x) {
        const int64_t y = j / width, x = j - y * width;
        atomicAdd(&histogram[source.at(c, y, x)], 1u);
        if (op == kTrivialContrast) gray += static_cast<unsigned long long>(trivial_gray_at(source, y, x));
      }
      if (op == kTrivialContrast) atomicAdd(&gray_sum, gray);
      __syncthreads();
      if (threadIdx.x == 0) trivial_table(op, draw.trivial_magnitude, histogram, gray_sum, plane, table);
      __syncthreads();
    }
    const float shift = mean[c], inv_std = augment_inv_std(stddev[c]);
    for (int64_t j = threadIdx.x; j < plane; j += blockDim.x) {
      const int64_t y = j / width, x = j - y * width;
      const float value = pixel_value(static_cast<uint8_t>(trivial_byte(source, table, c, y, x)));
      store(out, p * plane + j, augment_normalize(value, shift, inv_std));
    }
    __syncthreads();  // the next plane rebuilds the table
  }
}

}  // namespace

template <typename T>
void trivial_augment_batch(cudaStream_t stream, const uint8_t* in, T* out, int64_t n, int64_t channels,
                           int64_t height, int64_t width, int64_t crop_padding, const AugmentDraw* draws,
                           const float* mean, const float* stddev) {
  const int64_t planes = n * channels;
  if (planes <= 0 || height * width <= 0) return;
  const unsigned blocks = static_cast<unsigned>(planes < detail::kMaxBlocks ? planes : detail::kMaxBlocks);
  LS_LAUNCH(blocks, detail::kThreads, 0, stream, trivial_kernel<T>)(in, out, draws, mean, stddev, planes, channels,
                                                                    height, width, crop_padding);
  LS_CUDA_CHECK_LAUNCH("trivial_augment_batch");
}

template <typename T>
void augment_batch(cudaStream_t stream, const uint8_t* in, T* out, int64_t n, int64_t channels, int64_t height,
                   int64_t width, int64_t crop_padding, const AugmentDraw* draws, const float* mean,
                   const float* stddev) {
  const int64_t total = n * channels * height * width;
  if (total <= 0) return;
  launch_map(stream, total, AugmentValues<T>{in, out, draws, mean, stddev, channels, height, width, crop_padding},
             all_vec4_aligned(out));
  LS_CUDA_CHECK_LAUNCH("augment_batch");
}

#define LS_INSTANTIATE(T)                                                                                          \
  template void augment_batch<T>(cudaStream_t, const uint8_t*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, \
                                 const AugmentDraw*, const float*, const float*);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE
template void trivial_augment_batch<float>(cudaStream_t, const uint8_t*, float*, int64_t, int64_t, int64_t, int64_t,
                                           int64_t, const AugmentDraw*, const float*, const float*);
template void trivial_augment_batch<bf16_bits>(cudaStream_t, const uint8_t*, bf16_bits*, int64_t, int64_t, int64_t,
                                               int64_t, int64_t, const AugmentDraw*, const float*, const float*);

}  // namespace lockstep::cuda
