// Augmentation: one thread per output value (four consecutive ones when the
// output allows a vector store), each working out its sample, channel, row
// and column, and its resize taps on the spot; nothing is staged in shared
// memory, since every value reads at most four bytes of its own sample.
#include "kernels/cuda/augment_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/augment_math.h"
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

}  // namespace

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

}  // namespace lockstep::cuda
