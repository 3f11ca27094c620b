// TrivialAugmentWide on the GPU (ops::augment_images with `trivial`): equal
// to the CPU twin bit for bit, both reading kernels/trivial_augment_math.h,
// and so to torchvision 0.14 within one grey level on the stored images
// (tests/torch/trivial_oracle.py); with crops, mirrors, normalisation and
// bf16 output on the loader's own draws.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "data/augment.h"
#include "kernels/bf16_math.h"
#include "kernels/trivial_augment_math.h"
#include "ops/augment.h"
#include "support/augment_cases.h"
#include "support/trivial_cases.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

struct Batch {
  Shape shape;  // [N, C, H, W]
  std::vector<uint8_t> images;
  std::vector<AugmentDraw> draws;
  int64_t crop_padding = 0;
  std::vector<float> mean, std;
};

std::vector<float> augmented(const Batch& b, Device device, DType dtype = DType::f32) {
  Context ctx(device);
  const Shape channels{b.shape[1]};
  Tensor out = Tensor::empty(b.shape, device, dtype);
  ops::augment_images(ctx, Tensor::from_bytes(b.shape, b.images, device), ops::augment_draws(b.draws, device),
                      b.crop_padding, Tensor::from_vector(channels, b.mean, device),
                      Tensor::from_vector(channels, b.std, device), out, true);
  ctx.synchronize();
  return out.to_vector();
}

// Every stored case of image i as one batch: the image once per case.
Batch stored_batch(const TrivialImages& set, int64_t i, std::vector<const TrivialCase*>& cases) {
  const Shape& s = set.shapes[i];
  Batch b;
  for (const TrivialCase& c : set.cases) {
    if (c.image != i) continue;
    cases.push_back(&c);
    b.images.insert(b.images.end(), set.images[i].begin(), set.images[i].end());
    b.draws.push_back(c.draw);
  }
  b.shape = Shape{static_cast<int64_t>(cases.size()), s[0], s[1], s[2]};
  b.mean.assign(static_cast<size_t>(s[0]), 0.0f);
  b.std.assign(static_cast<size_t>(s[0]), 1.0f);
  return b;
}

}  // namespace

TEST_CASE("gpu trivial augment equals the cpu twin bit for bit and torchvision within one grey level",
          "[gpu][trivial][augment]") {
  const TrivialImages& set = trivial_images();
  int64_t compared = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(set.shapes.size()); ++i) {
    std::vector<const TrivialCase*> cases;
    const Batch b = stored_batch(set, i, cases);
    const std::vector<float> gpu = augmented(b, Device::cuda(0)), cpu = augmented(b, Device::cpu());
    REQUIRE(bits_difference(gpu, cpu) == "");
    const std::vector<uint8_t> bytes = bytes_of(gpu);
    const size_t per_image = set.images[i].size();
    for (size_t k = 0; k < cases.size(); ++k) {
      INFO(cases[k]->name);
      const std::vector<uint8_t> one(bytes.begin() + k * per_image, bytes.begin() + (k + 1) * per_image);
      CHECK(byte_difference(one, cases[k]->expected).largest <= 1);
      ++compared;
    }
  }
  REQUIRE(compared == static_cast<int64_t>(set.cases.size()));
}

TEST_CASE("gpu trivial augment with crops, mirrors, normalisation and bf16 equals the cpu twin",
          "[gpu][trivial][augment]") {
  // The crop batches of the augmentation tests (odd sizes, 1 and 3 channels,
  // every byte value), each sample's crop and flip drawn by the loader's
  // rule and its operation the next of the 14 in turn, at varied bins and signs.
  data::AugmentConfig config;
  config.horizontal_flip = true;
  config.trivial = true;
  int batches = 0;
  for (const AugmentCase& c : augment_cases()) {
    if (c.crop_padding == 0 || c.name.find(" crop") == std::string::npos) continue;
    INFO(c.name);
    const int64_t h = c.shape[2], w = c.shape[3];
    Batch b{c.shape, c.images, {}, c.crop_padding, c.mean, c.std};
    config.crop_padding = c.crop_padding;
    for (int64_t s = 0; s < c.shape[0]; ++s) {
      AugmentDraw d = data::draw_augmentation(config, 3, batches, s, Shape{c.shape[1], h, w});
      const int64_t k = batches * c.shape[0] + s;
      data::set_trivial_operation(d, static_cast<int32_t>(k % kTrivialOps), static_cast<int32_t>(k * 7 % kTrivialBins),
                                  k % 3 == 0, h, w);
      b.draws.push_back(d);
    }
    const std::vector<float> cpu = augmented(b, Device::cpu());
    REQUIRE(bits_difference(augmented(b, Device::cuda(0)), cpu) == "");
    std::vector<float> rounded(cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) rounded[i] = bf16_to_float(float_to_bf16(cpu[i]));
    REQUIRE(bits_difference(augmented(b, Device::cuda(0), DType::bf16), rounded) == "");
    ++batches;
  }
  REQUIRE(batches >= 14);
}
