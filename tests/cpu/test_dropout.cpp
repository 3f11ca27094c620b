#include <catch2/catch.hpp>

#include <cmath>

#include "ops/dropout.h"
#include "layers/dropout.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

// Runs dropout in training mode over ones of `shape`, so the output is the
// scaled mask: 0 or 1/(1-p).
std::vector<float> mask_of(Dropout& layer, const Shape& shape, uint64_t seed, uint64_t step, int64_t offset) {
  Context ctx(Device::cpu());
  Tensor x = Tensor::from_vector(shape, std::vector<float>(shape.numel(), 1.0f));
  Tensor y = Tensor::zeros(shape);
  layer.forward(ctx, {x}, y, Mode::train, StepInfo{seed, step, offset});
  return y.to_vector();
}

Dropout named(float p, const char* name) {
  Dropout d(p);
  d.name = name;
  return d;
}

int64_t count_differences(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace

TEST_CASE("dropout keeps a fraction 1-p within 3 sigma, scaled by 1/(1-p)", "[dropout]") {
  for (float p : {0.1f, 0.5f, 0.8f}) {
    Dropout d = named(p, "drop");
    const int64_t n = 100000;
    std::vector<float> y = mask_of(d, Shape{100, 1000}, 7, 3, 0);
    int64_t kept = 0;
    for (float v : y) {
      REQUIRE((v == 0.0f || v == Approx(1.0f / (1.0f - p)).epsilon(1e-6)));
      kept += v != 0.0f;
    }
    double q = 1.0 - p, sigma = std::sqrt(n * q * (1.0 - q));
    INFO("p " << p << ": kept " << kept << " of " << n);
    REQUIRE(std::abs(static_cast<double>(kept) - n * q) <= 3.0 * sigma);
  }
}

TEST_CASE("dropout's mask is a function of seed, step and layer name", "[dropout]") {
  Dropout d = named(0.5f, "drop1");
  Shape shape{3, 5, 7, 7};
  std::vector<float> first = mask_of(d, shape, 42, 10, 0);
  REQUIRE(mask_of(d, shape, 42, 10, 0) == first);
  // Half the elements flip between independent masks; demand a sizeable share.
  int64_t n = shape.numel();
  REQUIRE(count_differences(first, mask_of(d, shape, 42, 11, 0)) > n / 4);
  REQUIRE(count_differences(first, mask_of(d, shape, 43, 10, 0)) > n / 4);
  Dropout other = named(0.5f, "drop2");
  REQUIRE(count_differences(first, mask_of(other, shape, 42, 10, 0)) > n / 4);
}

TEST_CASE("replica slices with their sample offsets reproduce the full batch's mask", "[dropout]") {
  Dropout d = named(0.3f, "fc_drop");
  const int64_t batch = 6, per_sample = 3 * 5 * 5;
  std::vector<float> full = mask_of(d, Shape{batch, 3, 5, 5}, 9, 4, 0);
  // Two halves, and an uneven split 1 + 2 + 3 as the replica manager makes.
  for (std::vector<int64_t> split : {std::vector<int64_t>{3, 3}, std::vector<int64_t>{1, 2, 3}}) {
    std::vector<float> joined;
    int64_t offset = 0;
    for (int64_t count : split) {
      std::vector<float> part = mask_of(d, Shape{count, 3, 5, 5}, 9, 4, offset);
      joined.insert(joined.end(), part.begin(), part.end());
      offset += count;
    }
    REQUIRE(joined.size() == static_cast<size_t>(batch * per_sample));
    REQUIRE(joined == full);
  }
}

TEST_CASE("dropout in evaluation is the identity, forward and backward", "[dropout]") {
  LayerHarness h(std::make_unique<Dropout>(0.5f), {Shape{3, 3, 5}}, 3, 1);
  REQUIRE(h.forward(Mode::eval).to_vector() == h.inputs[0].to_vector());
  Tensor dy = random_tensor(h.output.shape(), 2);
  h.backward(dy);
  REQUIRE(h.input_grads[0].to_vector() == dy.to_vector());
}

TEST_CASE("dropout backward applies the forward mask", "[dropout]") {
  LayerHarness h(std::make_unique<Dropout>(0.25f), {Shape{3, 3, 5}}, 3, 1);
  h.step = {5, 2, 8};
  std::vector<float> x = h.inputs[0].to_vector(), y = h.forward().to_vector();
  Tensor dy = random_tensor(h.output.shape(), 2);
  h.backward(dy);
  std::vector<float> dx = h.input_grads[0].to_vector(), g = dy.to_vector();
  int64_t dropped = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    bool kept = y[i] != 0.0f;
    dropped += !kept;
    REQUIRE(y[i] == (kept ? x[i] * (1.0f / 0.75f) : 0.0f));
    REQUIRE(dx[i] == (kept ? g[i] * (1.0f / 0.75f) : 0.0f));
  }
  REQUIRE(dropped > 0);
}

TEST_CASE("dropout gradients match finite differences", "[dropout][gradcheck]") {
  for (int64_t batch : {1, 3}) {
    LayerHarness h(std::make_unique<Dropout>(0.4f), {Shape{3, 3, 5}}, batch, 3);
    h.step = {1, 7, 0};
    check_gradients(h, {.max_points = 1000});
    check_accumulate_mode(h);
  }
  LayerHarness zero(std::make_unique<Dropout>(0.0f), {Shape{10}}, 3, 3);
  REQUIRE(zero.forward().to_vector() == zero.inputs[0].to_vector());
  check_gradients(zero, {.max_points = 1000});
}

TEST_CASE("dropout rejects p outside 0 <= p < 1", "[dropout][errors]") {
  REQUIRE_THROWS_WITH(Dropout(1.0f), Catch::Contains("dropout") && Catch::Contains("outside [0, 1)"));
  REQUIRE_THROWS_WITH(Dropout(-0.1f), Catch::Contains("dropout: p = -0.1"));
  REQUIRE_THROWS_WITH(Dropout(std::nanf("")), Catch::Contains("dropout"));
  Dropout d(0.5f);
  d.name = "drop";
  REQUIRE_THROWS_WITH(d.output_shape({Shape{4}, Shape{4}}),
                      Catch::Contains("dropout 'drop' (input [4], [4])") && Catch::Contains("one input"));
  Context ctx(Device::cpu());
  Tensor x = Tensor::zeros(Shape{2, 4}), y = Tensor::zeros(Shape{2, 5});
  REQUIRE_THROWS_WITH(ops::dropout_forward(ctx, {}, x, y, 0.5f, 0),
                      Catch::Contains("dropout: shapes [2, 4] and [2, 5]"));
}
