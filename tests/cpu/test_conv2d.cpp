#include <catch2/catch.hpp>

#include "base/error.h"
#include "ops/conv.h"
#include "layers/conv2d.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

struct ConvCase {
  int64_t batch, channels, height, width, out_channels;
  int kernel, stride, padding;
  bool bias;
};

std::string describe_case(const ConvCase& c) {
  return "batch " + std::to_string(c.batch) + ", input " + std::to_string(c.channels) + "x" +
         std::to_string(c.height) + "x" + std::to_string(c.width) + " -> " + std::to_string(c.out_channels) +
         ", kernel " + std::to_string(c.kernel) + ", stride " + std::to_string(c.stride) + ", padding " +
         std::to_string(c.padding) + (c.bias ? ", bias" : ", no bias");
}

// Odd shapes on purpose: non-square images, channel counts that are not powers
// of two, strides that do not divide the padded extent, the pointwise fast path.
const std::vector<ConvCase> cases = {
    {1, 3, 3, 5, 5, 3, 1, 1, true},   // 3x5 image, "same" padding
    {3, 3, 3, 5, 5, 1, 1, 0, true},   // pointwise: no im2col
    {3, 3, 7, 7, 5, 3, 2, 1, true},   // stride 2 with padding
    {1, 3, 7, 7, 5, 5, 2, 0, false},  // kernel 5, stride 2, no padding, no bias
    {3, 3, 3, 5, 5, 5, 1, 1, true},   // kernel 5 needs the padding on a 3-row image
    {1, 3, 7, 7, 5, 1, 2, 0, true},   // 1x1 with stride: im2col subsamples
    {3, 3, 3, 5, 5, 3, 2, 1, false},  // 3x5, stride 2, padding 1
    {3, 3, 7, 7, 5, 5, 1, 1, true},   // taps that miss whole rows and columns
    {3, 3, 3, 1, 5, 5, 1, 2, true},   // a 1-wide image: some kernel columns never touch it
};

// Direct convolution by definition, in double, as the oracle of the im2col path.
std::vector<float> naive_conv(const ConvCase& c, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>* b) {
  int64_t oh_n = (c.height + 2 * c.padding - c.kernel) / c.stride + 1;
  int64_t ow_n = (c.width + 2 * c.padding - c.kernel) / c.stride + 1;
  std::vector<float> y(c.batch * c.out_channels * oh_n * ow_n);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out_channels; ++o)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double sum = b ? (*b)[o] : 0.0;
          for (int64_t ch = 0; ch < c.channels; ++ch)
            for (int64_t ki = 0; ki < c.kernel; ++ki)
              for (int64_t kj = 0; kj < c.kernel; ++kj) {
                int64_t ih = oh * c.stride - c.padding + ki, iw = ow * c.stride - c.padding + kj;
                if (ih < 0 || ih >= c.height || iw < 0 || iw >= c.width) continue;
                sum += double(x[((n * c.channels + ch) * c.height + ih) * c.width + iw]) *
                       w[((o * c.channels + ch) * c.kernel + ki) * c.kernel + kj];
              }
          y[((n * c.out_channels + o) * oh_n + oh) * ow_n + ow] = static_cast<float>(sum);
        }
  return y;
}

LayerHarness make_harness(const ConvCase& c, uint64_t seed) {
  return LayerHarness(std::make_unique<Conv2d>(c.out_channels, c.kernel, c.stride, c.padding, c.bias),
                      {Shape{c.channels, c.height, c.width}}, c.batch, seed);
}

}  // namespace

TEST_CASE("conv2d output shape follows (H + 2p - k) / s + 1", "[conv2d]") {
  Conv2d conv(5, 3, 2, 1);
  REQUIRE(conv.output_shape({Shape{3, 7, 7}}) == Shape{5, 4, 4});
  REQUIRE(conv.output_shape({Shape{3, 3, 5}}) == Shape{5, 2, 3});
  REQUIRE(Conv2d(4, 5, 1, 1).output_shape({Shape{2, 3, 5}}) == Shape{4, 1, 3});
}

TEST_CASE("conv2d declares weight then bias with their init, decay and fan-in", "[conv2d]") {
  auto specs = Conv2d(5, 3, 1, 1, true, Init::fan_out_normal).parameter_specs({Shape{3, 7, 7}});
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].name == "weight");
  CHECK(specs[0].shape == Shape{5, 3, 3, 3});
  CHECK(specs[0].init == Init::fan_out_normal);
  CHECK(specs[0].decay);
  CHECK(specs[1].name == "bias");
  CHECK(specs[1].shape == Shape{5});
  CHECK(specs[1].init == Init::fan_in_uniform);
  CHECK_FALSE(specs[1].decay);
  CHECK(specs[1].fan_in == 27);
  REQUIRE(Conv2d(5, 3, 1, 1, false).parameter_specs({Shape{3, 7, 7}}).size() == 1);
}

TEST_CASE("conv2d forward matches a direct convolution", "[conv2d]") {
  for (const ConvCase& c : cases) {
    INFO(describe_case(c));
    LayerHarness h = make_harness(c, 11);
    std::vector<float> x = h.inputs[0].to_vector();
    std::vector<float> w = h.arenas.param(0).to_vector();
    std::vector<float> b = c.bias ? h.arenas.param(1).to_vector() : std::vector<float>{};
    std::vector<float> expected = naive_conv(c, x, w, c.bias ? &b : nullptr);
    // Garbage in the output buffer must not leak through: forward writes all of it.
    h.output.copy_from(random_tensor(h.output.shape(), 5, 100.0f, 200.0f));
    std::vector<float> got = h.forward().to_vector();
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("output element " << i);
      REQUIRE(got[i] == Approx(expected[i]).margin(1e-5).epsilon(1e-5));
    }
  }
}

TEST_CASE("conv2d gradients of input, weight and bias match finite differences", "[conv2d][gradcheck]") {
  for (const ConvCase& c : cases) {
    INFO(describe_case(c));
    LayerHarness h = make_harness(c, 23);
    check_gradients(h, {.max_points = 200});
  }
}

TEST_CASE("conv2d adds its input gradient in accumulate mode", "[conv2d]") {
  for (const ConvCase& c : cases) {
    INFO(describe_case(c));
    LayerHarness h = make_harness(c, 31);
    check_accumulate_mode(h);
  }
}

TEST_CASE("conv2d backward writes its parameter gradients over whatever they held", "[conv2d]") {
  ConvCase c = cases[2];
  LayerHarness h = make_harness(c, 41);
  Tensor dy = random_tensor(h.forward().shape(), 3);
  h.backward(dy);
  std::vector<float> first = h.arenas.grads.to_vector();
  h.arenas.grads.copy_from(random_tensor(h.arenas.grads.shape(), 9, 50.0f, 60.0f));
  h.backward(dy);
  std::vector<float> second = h.arenas.grads.to_vector();
  for (size_t e = 0; e < h.arenas.entries().size(); ++e) {
    const ParamEntry& entry = h.arenas.entries()[e];
    for (int64_t i = entry.offset; i < entry.offset + entry.shape.numel(); ++i) REQUIRE(second[i] == first[i]);
  }
}

TEST_CASE("conv2d ops on an empty batch write zero parameter gradients", "[conv2d]") {
  Context ctx(Device::cpu());
  Tensor x = Tensor::zeros(Shape{0, 3, 5, 5});
  Tensor w = random_tensor(Shape{4, 3, 3, 3}, 1);
  Tensor y = Tensor::zeros(Shape{0, 4, 5, 5});
  ops::conv2d_forward(ctx, x, w, nullptr, y, 1, 1);
  Tensor dw = random_tensor(Shape{4, 3, 3, 3}, 2);
  Tensor db = random_tensor(Shape{4}, 3);
  ops::conv2d_backward_filter(ctx, x, y, dw, 1, 1);
  ops::conv2d_backward_bias(ctx, y, db);
  for (float v : dw.to_vector()) REQUIRE(v == 0.0f);
  for (float v : db.to_vector()) REQUIRE(v == 0.0f);
}

TEST_CASE("conv2d rejects bad configurations, naming the layer and the shapes", "[conv2d][errors]") {
  using Catch::Contains;
  SECTION("kernel larger than the padded input") {
    Conv2d conv(5, 7, 1, 1);
    conv.name = "conv1";
    std::vector<Shape> in{Shape{3, 3, 5}};
    REQUIRE_THROWS_AS(conv.output_shape(in), Error);
    REQUIRE_THROWS_WITH(conv.output_shape(in), Contains("conv2d 'conv1' (input [3, 3, 5])") &&
                                                   Contains("kernel 7x7 is larger than the padded input 5x7") &&
                                                   Contains("padding 1"));
  }
  SECTION("zero input channels") {
    Conv2d conv(5, 3);
    conv.name = "conv2";
    std::vector<Shape> in{Shape{0, 7, 7}};
    REQUIRE_THROWS_WITH(conv.output_shape(in),
                        Contains("conv2d 'conv2' (input [0, 7, 7])") && Contains("the input has 0 channels"));
  }
  SECTION("zero output channels") {
    Conv2d conv(0, 3);
    std::vector<Shape> in{Shape{3, 7, 7}};
    REQUIRE_THROWS_WITH(conv.output_shape(in), Contains("[3, 7, 7]") && Contains("0 output channels"));
  }
  SECTION("stride below 1") {
    Conv2d conv(5, 3, 0);
    std::vector<Shape> in{Shape{3, 7, 7}};
    REQUIRE_THROWS_WITH(conv.output_shape(in), Contains("[3, 7, 7]") && Contains("stride 0 must be at least 1"));
  }
  SECTION("negative padding") {
    Conv2d conv(5, 3, 1, -1);
    std::vector<Shape> in{Shape{3, 7, 7}};
    REQUIRE_THROWS_WITH(conv.output_shape(in), Contains("[3, 7, 7]") && Contains("padding -1 must not be negative"));
  }
  SECTION("an input that is not [C, H, W]") {
    Conv2d conv(5, 3);
    conv.name = "conv3";
    std::vector<Shape> in{Shape{48}};
    REQUIRE_THROWS_WITH(conv.output_shape(in),
                        Contains("conv2d 'conv3' (input [48])") && Contains("one [C, H, W] input"));
  }
  SECTION("ops: weight channels that differ from the input's") {
    Context ctx(Device::cpu());
    Tensor x = Tensor::zeros(Shape{2, 3, 5, 5}), w = Tensor::zeros(Shape{4, 2, 3, 3});
    Tensor y = Tensor::zeros(Shape{2, 4, 3, 3});
    REQUIRE_THROWS_WITH(ops::conv2d_forward(ctx, x, w, nullptr, y, 1, 0),
                        Contains("conv2d forward") && Contains("[4, 2, 3, 3]") && Contains("[2, 3, 5, 5]"));
  }
  SECTION("ops: an output of the wrong size") {
    Context ctx(Device::cpu());
    Tensor x = Tensor::zeros(Shape{2, 3, 5, 5}), w = Tensor::zeros(Shape{4, 3, 3, 3});
    Tensor y = Tensor::zeros(Shape{2, 4, 5, 5});
    REQUIRE_THROWS_WITH(ops::conv2d_forward(ctx, x, w, nullptr, y, 1, 0),
                        Contains("conv2d forward: output is [2, 4, 5, 5], expected [2, 4, 3, 3]"));
  }
  SECTION("ops: kernel larger than the padded input") {
    Context ctx(Device::cpu());
    Tensor x = Tensor::zeros(Shape{1, 3, 3, 5}), dw = Tensor::zeros(Shape{4, 3, 5, 5});
    Tensor dy = Tensor::zeros(Shape{1, 4, 1, 1});
    REQUIRE_THROWS_WITH(ops::conv2d_backward_filter(ctx, x, dy, dw, 1, 0),
                        Contains("conv2d backward filter: input [1, 3, 3, 5], weight [4, 3, 5, 5]") &&
                            Contains("larger than the padded input"));
  }
}
