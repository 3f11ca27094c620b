#pragma once
// CPU reference of augmentation (kernels/augment_math.h): crop from zero
// padding or resized box, mirror, and per-channel normalisation of samples
// [C, H, W], stored as bytes or as floats already scaled to [0, 1]; on bytes,
// TrivialAugmentWide after the crop when the draw names an operation
// (kernels/trivial_augment_math.h; floats, or a resized box, then give NaN).
#include <cstdint>

#include "kernels/augment_math.h"

namespace lockstep::cpu {

// One sample `in` augmented by `draw` into `out` (floats, [C, H, W]); when
// `mean` and `stddev` are given ([C] each), normalised: (x - mean[c]) / stddev[c].
// Runs on the calling thread alone: the data loader's threads call it while
// the compute pool trains. `in` and `out` must not overlap.
void augment_sample(const uint8_t* in, float* out, int64_t channels, int64_t height, int64_t width,
                    int64_t crop_padding, const AugmentDraw& draw, const float* mean, const float* stddev);
void augment_sample(const float* in, float* out, int64_t channels, int64_t height, int64_t width,
                    int64_t crop_padding, const AugmentDraw& draw, const float* mean, const float* stddev);

// A batch [n, C, H, W] of byte samples, sample i by draws[i], on the compute pool.
void augment_batch(const uint8_t* in, float* out, int64_t n, int64_t channels, int64_t height, int64_t width,
                   int64_t crop_padding, const AugmentDraw* draws, const float* mean, const float* stddev);

}  // namespace lockstep::cpu
