#pragma once
// Batches of byte images with their augmentation draws, for the tests of the
// augmentation kernels: odd and tiny sizes, 1 and 3 channels, crop padding
// 0, 1 and 4, crops with and without mirroring, random resized crops (the
// data loader's draws and hand-picked edge boxes), with and without
// normalisation. Pixels span every byte value, 0 and 255 included.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/augment_math.h"
#include "runtime/shape.h"

namespace lockstep::testing {

struct AugmentCase {
  std::string name;  // for INFO
  Shape shape;       // [N, C, H, W]
  int64_t crop_padding = 0;
  std::vector<uint8_t> images;    // shape.numel() bytes
  std::vector<AugmentDraw> draws;  // N
  // Normalised when set; otherwise mean 0 and std 1, which the kernels must
  // turn into the values as they are.
  bool normalized = false;
  std::vector<float> mean, std;  // C each
};

std::vector<AugmentCase> augment_cases();

// Empty when every float of `actual` has the bits of `expected`'s; else what
// differs: the sizes, or the first element that differs and both values.
std::string bits_difference(const std::vector<float>& actual, const std::vector<float>& expected);

}  // namespace lockstep::testing
