#pragma once
// torchvision 0.14's TrivialAugmentWide operations on three small stored
// images (tests/torch/trivial_oracle.py, tests/golden/trivial_augment.safetensors):
// each case's draw (set_trivial_operation with torchvision's operation, bin
// and sign) and torchvision's bytes, for the CPU and the GPU tests.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/augment_math.h"
#include "runtime/shape.h"

namespace lockstep::testing {

struct TrivialCase {
  std::string name;                // "image 0, Rotate bin 9 negative", for INFO
  int64_t image = 0;               // which stored image
  AugmentDraw draw;                // no crop, no flip: the operation alone
  double torch_magnitude = 0.0;    // the magnitude torchvision's _apply_op was given
  std::vector<uint8_t> expected;  // torchvision's bytes, [C, H, W]
};

struct TrivialImages {
  std::vector<Shape> shapes;                 // [C, H, W] of each image
  std::vector<std::vector<uint8_t>> images;  // their bytes
  std::vector<TrivialCase> cases;            // every stored case of every image
};

// Read once from golden_file("trivial_augment.safetensors").
const TrivialImages& trivial_images();

// The largest |a - b| over two byte images, and how many bytes differ.
struct ByteDifference {
  int largest = 0;
  int64_t count = 0;
};
ByteDifference byte_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

// Floats that are bytes / 255 (augmentation without normalisation) back to the bytes.
std::vector<uint8_t> bytes_of(const std::vector<float>& values);

}  // namespace lockstep::testing
