// The augmentation kernel against its CPU twin, bit for bit: every step of
// kernels/augment_math.h is one correctly rounded IEEE operation (the _rn
// intrinsics keep nvcc from fusing a multiply into an add), and the bilinear
// taps are worked out in double alike, so a real GPU owes the same bits as
// the emulated one. bf16 output is the float result rounded once.
#include <catch2/catch.hpp>

#include <vector>

#include "kernels/bf16_math.h"
#include "ops/augment.h"
#include "support/augment_cases.h"

using namespace lockstep;
using lockstep::testing::augment_cases;
using lockstep::testing::AugmentCase;
using lockstep::testing::bits_difference;

namespace {

struct Inputs {
  Tensor images, draws, mean, std;
};

Inputs inputs(const AugmentCase& c, Device device) {
  const Shape channels{c.shape[1]};
  return {Tensor::from_bytes(c.shape, c.images, device), ops::augment_draws(c.draws, device),
          Tensor::from_vector(channels, c.mean, device), Tensor::from_vector(channels, c.std, device)};
}

std::vector<float> on_cpu(const AugmentCase& c) {
  Context ctx(Device::cpu());
  const Inputs in = inputs(c, Device::cpu());
  Tensor out = Tensor::empty(c.shape);
  ops::augment_images(ctx, in.images, in.draws, c.crop_padding, in.mean, in.std, out);
  return out.to_vector();
}

}  // namespace

TEST_CASE("gpu augment equals the cpu twin bit for bit", "[gpu][augment]") {
  Context ctx(Device::cuda(0));
  const std::vector<AugmentCase> cases = augment_cases();
  REQUIRE(cases.size() > 1);
  for (const AugmentCase& c : cases) {
    INFO(c.name);
    const Inputs in = inputs(c, ctx.device());
    Tensor out = Tensor::empty(c.shape, ctx.device());
    ops::augment_images(ctx, in.images, in.draws, c.crop_padding, in.mean, in.std, out);
    ctx.synchronize();
    REQUIRE(bits_difference(out.to_vector(), on_cpu(c)) == "");
  }
}

TEST_CASE("gpu augment writes an unaligned output one value at a time, and bf16 rounded once",
          "[gpu][augment]") {
  Context ctx(Device::cuda(0));
  const std::vector<AugmentCase> cases = augment_cases();
  REQUIRE(cases.size() > 1);
  for (const AugmentCase& c : cases) {
    INFO(c.name);
    const Inputs in = inputs(c, ctx.device());
    const std::vector<float> expected = on_cpu(c);
    // One value into a larger buffer: the four-wide stores cannot be used.
    Tensor buffer = Tensor::empty(Shape{c.shape.numel() + 1}, ctx.device());
    Tensor shifted = buffer.view(1, c.shape);
    ops::augment_images(ctx, in.images, in.draws, c.crop_padding, in.mean, in.std, shifted);
    Tensor half = Tensor::empty(c.shape, ctx.device(), DType::bf16);
    ops::augment_images(ctx, in.images, in.draws, c.crop_padding, in.mean, in.std, half);
    ctx.synchronize();
    REQUIRE(bits_difference(shifted.to_vector(), expected) == "");
    std::vector<float> rounded(expected.size());
    for (size_t i = 0; i < expected.size(); ++i) rounded[i] = bf16_to_float(float_to_bf16(expected[i]));
    REQUIRE(bits_difference(half.to_vector(), rounded) == "");
  }
}
