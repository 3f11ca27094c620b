#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "ops/pool.h"
#include "layers/pool.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

struct Config {
  int64_t batch, channels, height, width;
  int kernel, stride, padding;
};

// Every combination the brief asks for: 3x5 and 7x7 images, kernel 2 and 3,
// stride 1 and 2, padding 0 and 1, batch 1 and 3, 3 channels.
std::vector<Config> configs() {
  std::vector<Config> out;
  for (auto [h, w] : {std::pair<int64_t, int64_t>{3, 5}, {7, 7}})
    for (int k : {2, 3})
      for (int s : {1, 2})
        for (int p : {0, 1})
          for (int64_t n : {1, 3}) out.push_back({n, 3, h, w, k, s, p});
  return out;
}

std::string config_text(const Config& c) {
  return "batch " + std::to_string(c.batch) + ", image " + std::to_string(c.height) + "x" + std::to_string(c.width) +
         ", kernel " + std::to_string(c.kernel) + ", stride " + std::to_string(c.stride) + ", padding " +
         std::to_string(c.padding);
}

int64_t out_extent(int64_t in, const Config& c) { return (in + 2 * c.padding - c.kernel) / c.stride + 1; }

// Naive pooling straight from the definition: walk the whole kernel and treat
// positions outside the image as padding (-inf for max, 0 for average).
// `argmax` receives, for max pooling, the flat input index each output took.
std::vector<float> naive_pool(const std::vector<float>& x, const Config& c, bool max,
                              std::vector<int64_t>* argmax = nullptr) {
  int64_t oh_n = out_extent(c.height, c), ow_n = out_extent(c.width, c);
  std::vector<float> y;
  for (int64_t plane = 0; plane < c.batch * c.channels; ++plane)
    for (int64_t oh = 0; oh < oh_n; ++oh)
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        float best = -std::numeric_limits<float>::infinity(), sum = 0.0f;
        int64_t best_at = -1;
        for (int kh = 0; kh < c.kernel; ++kh)
          for (int kw = 0; kw < c.kernel; ++kw) {
            int64_t ih = oh * c.stride - c.padding + kh, iw = ow * c.stride - c.padding + kw;
            if (ih < 0 || ih >= c.height || iw < 0 || iw >= c.width) continue;
            int64_t at = (plane * c.height + ih) * c.width + iw;
            sum += x[at];
            if (x[at] > best) {
              best = x[at];
              best_at = at;
            }
          }
        y.push_back(max ? best : sum / static_cast<float>(c.kernel * c.kernel));
        if (argmax) argmax->push_back(best_at);
      }
  return y;
}

std::unique_ptr<Layer> make_pool(bool max, const Config& c) {
  if (max) return std::make_unique<MaxPool2d>(c.kernel, c.stride, c.padding);
  return std::make_unique<AvgPool2d>(c.kernel, c.stride, c.padding);
}

LayerHarness harness(bool max, const Config& c, uint64_t seed) {
  return LayerHarness(make_pool(max, c), {Shape{c.channels, c.height, c.width}}, c.batch, seed);
}

// Distinct values at least 0.05 apart (> 2h for h = 0.01) in random order, so
// no finite-difference step changes a window's arg-max.
void make_distinct(Tensor& t, uint64_t seed) {
  std::vector<float> v(t.numel());
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>(order[i]) - 5.0f;
  t.copy_from(Tensor::from_vector(t.shape(), v));
}

}  // namespace

TEST_CASE("max and average pooling forward match naive loops on odd shapes", "[pool]") {
  for (bool max : {true, false})
    for (const Config& c : configs()) {
      INFO((max ? "maxpool2d " : "avgpool2d ") << config_text(c));
      LayerHarness h = harness(max, c, 11);
      REQUIRE(h.output.shape() == Shape{c.batch, c.channels, out_extent(c.height, c), out_extent(c.width, c)});
      std::vector<float> expected = naive_pool(h.inputs[0].to_vector(), c, max);
      std::vector<float> got = h.forward().to_vector();
      REQUIRE(got.size() == expected.size());
      for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(expected[i]).margin(1e-6));
    }
}

TEST_CASE("max pooling backward routes each gradient to its window's arg-max", "[pool]") {
  for (const Config& c : configs()) {
    INFO("maxpool2d " << config_text(c));
    LayerHarness h = harness(true, c, 12);
    std::vector<int64_t> argmax;
    naive_pool(h.inputs[0].to_vector(), c, true, &argmax);
    Tensor dy = random_tensor(h.output.shape(), 5);
    std::vector<float> dy_host = dy.to_vector(), expected(h.inputs[0].numel(), 0.0f);
    for (size_t o = 0; o < argmax.size(); ++o) expected[argmax[o]] += dy_host[o];
    h.forward();
    h.backward(dy);
    std::vector<float> got = h.input_grads[0].to_vector();
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(expected[i]).margin(1e-6));
  }
}

TEST_CASE("max pooling sends a tied window's gradient to its first maximum", "[pool]") {
  // 1 sample, 1 channel, 3x5 of equal values, kernel 2 stride 1 padding 1: the
  // padding never wins, and each window's first real element takes dy.
  LayerHarness h(std::make_unique<MaxPool2d>(2, 1, 1), {Shape{1, 3, 5}}, 1, 3);
  h.inputs[0].copy_from(Tensor::from_vector(Shape{1, 1, 3, 5}, std::vector<float>(15, -2.0f)));
  Tensor& y = h.forward();
  for (float v : y.to_vector()) REQUIRE(v == -2.0f);
  REQUIRE(y.shape() == Shape{1, 1, 4, 6});
  h.backward(Tensor::from_vector(y.shape(), std::vector<float>(24, 1.0f)));
  // Window (oh, ow) starts at row max(oh-1, 0), column max(ow-1, 0).
  std::vector<float> expected(15, 0.0f);
  for (int oh = 0; oh < 4; ++oh)
    for (int ow = 0; ow < 6; ++ow) expected[std::max(oh - 1, 0) * 5 + std::max(ow - 1, 0)] += 1;
  REQUIRE(h.input_grads[0].to_vector() == expected);
}

TEST_CASE("max pooling propagates NaN", "[pool]") {
  LayerHarness h(std::make_unique<MaxPool2d>(2), {Shape{1, 2, 2}}, 1, 3);
  h.inputs[0].copy_from(Tensor::from_vector(Shape{1, 1, 2, 2}, {1.0f, std::nanf(""), 3.0f, 2.0f}));
  REQUIRE(std::isnan(h.forward().to_vector()[0]));
}

TEST_CASE("max pooling gradients match finite differences", "[pool][gradcheck]") {
  for (const Config& c : configs()) {
    if (c.batch != 3) continue;
    INFO("maxpool2d " << config_text(c));
    LayerHarness h = harness(true, c, 21);
    make_distinct(h.inputs[0], 21);
    check_gradients(h, {.max_points = 1000});
    check_accumulate_mode(h);
  }
}

TEST_CASE("average pooling gradients match finite differences", "[pool][gradcheck]") {
  for (const Config& c : configs()) {
    if (c.batch != 3) continue;
    INFO("avgpool2d " << config_text(c));
    LayerHarness h = harness(false, c, 22);
    check_gradients(h, {.max_points = 1000});
    check_accumulate_mode(h);
  }
}

TEST_CASE("average pooling divides by the whole kernel, padding included", "[pool]") {
  // A 1x1 image of 4, kernel 2 padding 1 stride 1: four windows each see only the 4.
  LayerHarness h(std::make_unique<AvgPool2d>(2, 1, 1), {Shape{1, 1, 1}}, 1, 3);
  h.inputs[0].copy_from(Tensor::from_vector(Shape{1, 1, 1, 1}, {4.0f}));
  REQUIRE(h.forward().to_vector() == std::vector<float>(4, 1.0f));
}

TEST_CASE("stride 0 means stride = kernel", "[pool]") {
  MaxPool2d max(3);
  AvgPool2d avg(2, 0, 1);
  REQUIRE(max.window().stride == 3);
  REQUIRE(avg.window().stride == 2);
  REQUIRE(max.output_shape({Shape{5, 7, 7}}) == Shape{5, 2, 2});
  REQUIRE(avg.output_shape({Shape{5, 3, 5}}) == Shape{5, 2, 3});
}

TEST_CASE("global average pooling takes each channel's mean", "[pool]") {
  for (int64_t batch : {1, 3}) {
    LayerHarness h(std::make_unique<GlobalAvgPool>(), {Shape{5, 3, 5}}, batch, 31);
    REQUIRE(h.output.shape() == Shape{batch, 5, 1, 1});
    std::vector<float> x = h.inputs[0].to_vector(), y = h.forward().to_vector();
    for (int64_t plane = 0; plane < batch * 5; ++plane) {
      double sum = 0;
      for (int i = 0; i < 15; ++i) sum += x[plane * 15 + i];
      REQUIRE(y[plane] == Approx(sum / 15).margin(1e-6));
    }
    check_gradients(h, {.max_points = 1000});
    check_accumulate_mode(h);
  }
}

TEST_CASE("pooling layers reject bad configurations and shapes, naming the layer", "[pool][errors]") {
  REQUIRE_THROWS_WITH(MaxPool2d(0), Catch::Contains("maxpool2d") && Catch::Contains("kernel 0 must be at least 1"));
  REQUIRE_THROWS_WITH(AvgPool2d(3, -1), Catch::Contains("avgpool2d") && Catch::Contains("stride -1"));
  REQUIRE_THROWS_WITH(MaxPool2d(3, 1, -1), Catch::Contains("maxpool2d") && Catch::Contains("padding -1"));
  REQUIRE_THROWS_WITH(AvgPool2d(2, 2, 2),
                      Catch::Contains("avgpool2d") && Catch::Contains("more than half the kernel 2"));

  MaxPool2d max(3);
  max.name = "pool1";
  REQUIRE_THROWS_WITH(max.output_shape({Shape{4, 2, 5}}),
                      Catch::Contains("maxpool2d 'pool1' (input [4, 2, 5])") &&
                          Catch::Contains("smaller than the kernel 3"));
  REQUIRE_THROWS_WITH(max.output_shape({Shape{20}}), Catch::Contains("maxpool2d 'pool1' (input [20])") &&
                                                         Catch::Contains("[C, H, W]"));
  REQUIRE_THROWS_WITH(max.output_shape({Shape{3, 7, 7}, Shape{3, 7, 7}}),
                      Catch::Contains("maxpool2d 'pool1'") && Catch::Contains("one input"));
  AvgPool2d avg(2, 1, 1);
  avg.name = "pool2";
  REQUIRE(avg.output_shape({Shape{3, 1, 1}}) == Shape{3, 2, 2});
  REQUIRE_THROWS_WITH(avg.output_shape({Shape{3, 0, 4}}),
                      Catch::Contains("avgpool2d 'pool2' (input [3, 0, 4])") && Catch::Contains("empty"));
  GlobalAvgPool gap;
  gap.name = "gap";
  REQUIRE_THROWS_WITH(gap.output_shape({Shape{10}}), Catch::Contains("global_avgpool 'gap' (input [10])"));
}

TEST_CASE("pooling ops reject mismatched tensors, naming the op and shapes", "[pool][errors]") {
  Context ctx(Device::cpu());
  Tensor x = Tensor::zeros(Shape{2, 3, 7, 7});
  Tensor wrong = Tensor::zeros(Shape{2, 3, 4, 4});
  REQUIRE_THROWS_WITH(ops::max_pool2d_forward(ctx, x, wrong, PoolWindow{2, 2, 0}),
                      Catch::Contains("max_pool2d: output is [2, 3, 4, 4], expected [2, 3, 3, 3]"));
  Tensor y = Tensor::zeros(Shape{2, 3, 3, 3});
  Tensor dx_wrong = Tensor::zeros(Shape{2, 3, 7, 6});
  REQUIRE_THROWS_WITH(ops::avg_pool2d_backward(ctx, x, y, y, dx_wrong, PoolWindow{2, 2, 0}, false),
                      Catch::Contains("avg_pool2d backward: input gradient is [2, 3, 7, 6]"));
  REQUIRE_THROWS_WITH(ops::max_pool2d_forward(ctx, x, y, PoolWindow{9, 1, 0}),
                      Catch::Contains("max_pool2d: input [2, 3, 7, 7] with kernel 9"));
}

TEST_CASE("adaptive average pooling averages PyTorch's windows, shrinking or growing, and its gradient checks",
          "[pool]") {
  // 5 -> 3: rows [0, 2), [1, 4), [3, 5) (floor(i*5/3) to ceil((i+1)*5/3)); 1 -> 2: the value repeated.
  LayerHarness h(std::make_unique<AdaptiveAvgPool2d>(3, 2), {Shape{2, 5, 1}}, 2, 41);
  REQUIRE(h.output.shape() == Shape{2, 2, 3, 2});
  const std::vector<float> x = h.inputs[0].to_vector(), y = h.forward().to_vector();
  for (int64_t plane = 0; plane < 4; ++plane) {
    const float* p = x.data() + plane * 5;
    const float want[3] = {(p[0] + p[1]) / 2, (p[1] + p[2] + p[3]) / 3, (p[3] + p[4]) / 2};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j) REQUIRE(y[plane * 6 + i * 2 + j] == Approx(want[i]).margin(1e-6));
  }
  check_gradients(h, {.max_points = 1000});
  check_accumulate_mode(h);
  for (auto [in, out] : {std::pair<Shape, int64_t>{Shape{3, 7, 5}, 3}, {Shape{3, 2, 3}, 7}, {Shape{2, 7, 7}, 7}}) {
    INFO(in.str() << " -> " << out << "x" << out);
    LayerHarness g(std::make_unique<AdaptiveAvgPool2d>(out, out), {in}, 2, 42);
    check_gradients(g, {.max_points = 1000});
    check_accumulate_mode(g);
  }
  // 7x7 -> 7x7 is the identity.
  LayerHarness same(std::make_unique<AdaptiveAvgPool2d>(7, 7), {Shape{2, 7, 7}}, 1, 43);
  REQUIRE(same.forward().to_vector() == same.inputs[0].to_vector());
  REQUIRE_THROWS_WITH(AdaptiveAvgPool2d(0, 7), Catch::Contains("adaptive_avgpool2d") && Catch::Contains("0x7"));
}
