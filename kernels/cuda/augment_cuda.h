#pragma once
// Augmentation on the GPU: a batch of byte samples in, floats (or bf16) out,
// cropped or box-resized, mirrored and normalised in one launch, with the
// arithmetic of kernels/augment_math.h, so the result equals the CPU
// reference (kernels/cpu/augment_cpu.h) bit for bit.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/augment_math.h"

namespace lockstep::cuda {

// out[i] ([C, H, W]) = sample i of `in` ([n, C, H, W] bytes) augmented by
// draws[i], then (x - mean[c]) / stddev[c]. Every pointer is device memory;
// `in` and `out` do not overlap. T: float or bf16_bits (kernels/stored_type.h),
// the maths in float either way, rounded to bf16 once at the store.
template <typename T>
void augment_batch(cudaStream_t stream, const uint8_t* in, T* out, int64_t n, int64_t channels, int64_t height,
                   int64_t width, int64_t crop_padding, const AugmentDraw* draws, const float* mean,
                   const float* stddev);

// As augment_batch, with TrivialAugmentWide's operation of each draw on the
// cropped bytes before the division (kernels/trivial_augment_math.h): one
// block per sample's channel, which first counts the channel's histogram
// when the operation maps levels through a table. Crops only, no boxes.
template <typename T>
void trivial_augment_batch(cudaStream_t stream, const uint8_t* in, T* out, int64_t n, int64_t channels,
                           int64_t height, int64_t width, int64_t crop_padding, const AugmentDraw* draws,
                           const float* mean, const float* stddev);

}  // namespace lockstep::cuda
