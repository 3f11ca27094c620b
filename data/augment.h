#pragma once
// Host-side augmentation, in torchvision's order: random crop from the image
// padded with zeros (or a random resized crop), random horizontal flip, then
// per-channel normalisation.
// Crops and flips are drawn from (seed, epoch, sample index), so a sample
// looks the same whichever loader thread prepares it.
#include <cstdint>
#include <vector>

#include "data/dataset.h"
#include "kernels/augment_math.h"
#include "runtime/shape.h"

namespace lockstep::data {

// Per-channel statistics of pixel values in [0, 1].
struct Normalization {
  std::vector<float> mean, std;
};

// ImageNet's RGB mean and standard deviation (on pixels in [0, 1]), which
// torchvision's and timm's pretrained weights expect.
Normalization imagenet_normalization();
// Mean 0 and standard deviation 1 for each of `channels`: the pixels as they are.
Normalization no_normalization(int64_t channels);

// Mean and population standard deviation per channel over the data set, or
// over `max_samples` evenly spaced samples of it when 0 < max_samples < size
// (enough for statistics, without decoding a whole image folder). A channel
// that never varies gets std 1. With skip_bad, unreadable samples are
// passed over (skip_bad_images) instead of throwing.
Normalization compute_normalization(const Dataset& dataset, int64_t max_samples = 0, bool skip_bad = false);

struct AugmentConfig {
  // Crop the original size out of the image padded with this many zero
  // pixels on every side; 0 turns the crop off.
  int64_t crop_padding = 0;
  // Mirror left-right with probability 1/2.
  bool horizontal_flip = false;
  // torchvision's RandomResizedCrop on the sample: a box of 8% to 100% of its
  // area, of aspect ratio 3/4 to 4/3 (log-uniform), resized back to the
  // sample's size bilinearly. Not with crop_padding.
  bool random_resized_crop = false;
  // torchvision's TrivialAugmentWide on the cropped, mirrored bytes, before
  // normalisation: one of its 14 operations at one of 31 magnitude bins and a
  // sign (kernels/trivial_augment_math.h). Samples of 1 or 3 channels, not
  // with random_resized_crop.
  bool trivial = false;

  bool enabled() const { return crop_padding > 0 || random_resized_crop || horizontal_flip || trivial; }
};

// What augmentation does to one sample (kernels/augment_math.h, where the
// arithmetic of both the CPU and the GPU path is written).
using lockstep::AugmentDraw;
// `shape`: the sample's [C, H, W]. The crop, flip and box come first from
// the sample's stream, TrivialAugment's operation, bin and sign after them,
// so turning it on leaves the crops and flips as they were.
AugmentDraw draw_augmentation(const AugmentConfig& config, uint64_t seed, int64_t epoch, int64_t sample,
                              const Shape& shape);

// Sets `draw`'s TrivialAugmentWide operation `op` (TrivialOp), magnitude bin
// and sign, with the magnitude and affine matrix they give on a sample of
// height x width (draw_augmentation calls it with its draws; tests with theirs).
void set_trivial_operation(AugmentDraw& draw, int32_t op, int32_t bin, bool negative, int64_t height,
                           int64_t width);

// Writes the cropped (or box-resized) and flipped `in` ([C, H, W] in
// `shape`) to `out`; the two must not overlap.
void apply_augmentation(const float* in, float* out, const Shape& shape, int64_t crop_padding,
                        const AugmentDraw& draw);

// x = (x - mean[c]) / std[c], in place over [C, H, W].
void normalize(float* chw, const Shape& shape, const Normalization& norm);

}  // namespace lockstep::data
