#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "base/error.h"
#include "kernels/bn_math.h"
#include "ops/batchnorm.h"
#include "layers/batchnorm2d.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

struct DoubleStats {
  std::vector<double> mean, var;
};

// Mean and biased variance per channel of x [N, C, H, W], in double, two passes.
DoubleStats reference_stats(const std::vector<float>& x, int64_t n, int64_t c, int64_t spatial) {
  DoubleStats s{std::vector<double>(c, 0.0), std::vector<double>(c, 0.0)};
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < spatial; ++j) sum += x[(i * c + ch) * spatial + j];
    s.mean[ch] = sum / static_cast<double>(n * spatial);
    double sq = 0.0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < spatial; ++j) {
        double d = x[(i * c + ch) * spatial + j] - s.mean[ch];
        sq += d * d;
      }
    s.var[ch] = sq / static_cast<double>(n * spatial);
  }
  return s;
}

// Channel ch of a [N, C, H, W] batch drawn from mean + std * (uniform with unit variance).
void fill_channel(std::vector<float>& x, int64_t n, int64_t c, int64_t spatial, int64_t ch, double mean, double std,
                  uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> unit(-std::sqrt(3.0), std::sqrt(3.0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < spatial; ++j) x[(i * c + ch) * spatial + j] = static_cast<float>(mean + std * unit(gen));
}

double relative(double value, double reference) { return std::abs(value - reference) / std::abs(reference); }

}  // namespace

TEST_CASE("batchnorm2d declares its parameters and running statistics", "[batchnorm2d]") {
  BatchNorm2d bn(1e-3f, 0.25f);
  REQUIRE(bn.type() == "batchnorm2d");
  REQUIRE(bn.output_shape({Shape{5, 3, 5}}) == Shape{5, 3, 5});
  auto params = bn.parameter_specs({Shape{5, 3, 5}});
  REQUIRE(params.size() == 2);
  CHECK((params[0].name == "weight" && params[0].shape == Shape{5} && params[0].init == Init::ones));
  CHECK((params[1].name == "bias" && params[1].shape == Shape{5} && params[1].init == Init::zeros));
  CHECK((!params[0].decay && !params[1].decay));
  auto state = bn.state_specs({Shape{5, 3, 5}});
  REQUIRE(state.size() == 2);
  CHECK((state[0].name == "running_mean" && state[0].shape == Shape{5} && state[0].init == Init::zeros));
  CHECK((state[1].name == "running_var" && state[1].shape == Shape{5} && state[1].init == Init::ones));

  LayerHarness h(std::make_unique<BatchNorm2d>(1e-3f, 0.25f), {Shape{5, 3, 5}}, 2, 3);
  h.layer().name = "bn1";
  BatchNormState* s = h.layer().batch_norm_state();
  REQUIRE(s != nullptr);
  CHECK(s->name == "bn1");
  CHECK(s->momentum == 0.25f);
  CHECK(s->running_mean.to_vector() == std::vector<float>(5, 0.0f));
  CHECK(s->running_var.to_vector() == std::vector<float>(5, 1.0f));
  CHECK((s->batch_mean.shape() == Shape{5} && s->batch_var.shape() == Shape{5}));
}

TEST_CASE("batchnorm2d training gradients match finite differences", "[batchnorm2d][gradcheck]") {
  SECTION("batch 1, 5 channels of 3x5") {
    LayerHarness h(std::make_unique<BatchNorm2d>(), {Shape{5, 3, 5}}, 1, 11);
    check_gradients(h, {.max_points = 1000});
  }
  SECTION("batch 3, 5 channels of 3x5") {
    LayerHarness h(std::make_unique<BatchNorm2d>(), {Shape{5, 3, 5}}, 3, 12);
    check_gradients(h, {.max_points = 1000});
  }
  SECTION("batch 2, 7 channels of 1x3, a large eps") {
    LayerHarness h(std::make_unique<BatchNorm2d>(0.1f), {Shape{7, 1, 3}}, 2, 13);
    check_gradients(h, {.max_points = 1000});
  }
}

TEST_CASE("batchnorm2d adds its input gradient in accumulate mode", "[batchnorm2d]") {
  LayerHarness h(std::make_unique<BatchNorm2d>(), {Shape{5, 3, 5}}, 3, 21);
  check_accumulate_mode(h);
}

TEST_CASE("batchnorm2d eval forward uses the running statistics", "[batchnorm2d]") {
  const float eps = 1e-3f;
  LayerHarness h(std::make_unique<BatchNorm2d>(eps), {Shape{5, 3, 5}}, 3, 31);
  BatchNormState* s = h.layer().batch_norm_state();
  const std::vector<float> rm{0.5f, -1.0f, 0.0f, 2.0f, 0.25f}, rv{1.0f, 0.25f, 4.0f, 0.01f, 2.0f};
  s->running_mean.copy_from(Tensor::from_vector(Shape{5}, rm));
  s->running_var.copy_from(Tensor::from_vector(Shape{5}, rv));
  std::vector<float> gamma = h.arenas.param(0).to_vector(), beta = h.arenas.param(1).to_vector();
  std::vector<float> x = h.inputs[0].to_vector();
  std::vector<float> y = h.forward(Mode::eval).to_vector();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t j = 0; j < 15; ++j) {
        const int64_t k = (i * 5 + c) * 15 + j;
        const double expected = gamma[c] * (x[k] - rm[c]) / std::sqrt(static_cast<double>(rv[c]) + eps) + beta[c];
        REQUIRE(y[k] == Approx(expected).margin(1e-5));
      }
  // Eval leaves the running statistics as they were.
  CHECK(s->running_mean.to_vector() == rm);
  CHECK(s->running_var.to_vector() == rv);
}

TEST_CASE("batchnorm2d batch statistics match a double computation, even for mean >> std",
          "[batchnorm2d]") {
  const int64_t n = 3, c = 4, spatial = 15;
  const float eps = 1e-5f;
  LayerHarness h(std::make_unique<BatchNorm2d>(eps), {Shape{c, 3, 5}}, n, 41);
  std::vector<float> x(n * c * spatial);
  fill_channel(x, n, c, spatial, 0, 1000.0, 1.0, 1);   // mean 1000x the std
  fill_channel(x, n, c, spatial, 1, 0.0, 0.5, 2);
  fill_channel(x, n, c, spatial, 2, -300.0, 0.01, 3);  // mean 30000x the std
  fill_channel(x, n, c, spatial, 3, 2.0, 3.0, 4);
  h.inputs[0].copy_from(Tensor::from_vector(h.inputs[0].shape(), x));
  std::vector<float> y = h.forward(Mode::train).to_vector();

  const DoubleStats ref = reference_stats(x, n, c, spatial);
  BatchNormState* s = h.layer().batch_norm_state();
  std::vector<float> mean = s->batch_mean.to_vector(), var = s->batch_var.to_vector();
  for (int64_t ch = 0; ch < c; ++ch) {
    INFO("channel " << ch << ": mean " << mean[ch] << " vs " << ref.mean[ch] << ", variance " << var[ch] << " vs "
                    << ref.var[ch]);
    CHECK(relative(mean[ch], ref.mean[ch]) <= 1e-6);
    CHECK(relative(var[ch], ref.var[ch]) <= 1e-5);
  }
  CHECK(s->values_per_channel == n * spatial);
  // The output is normalised with those statistics.
  std::vector<float> gamma = h.arenas.param(0).to_vector(), beta = h.arenas.param(1).to_vector();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t j = 0; j < spatial; ++j) {
        const int64_t k = (i * c + ch) * spatial + j;
        const double expected = gamma[ch] * (x[k] - ref.mean[ch]) / std::sqrt(ref.var[ch] + eps) + beta[ch];
        INFO("channel " << ch << " element " << k);
        // The float mean of channel 2 is off by up to half an ulp of 300 (3e-5), 3e-3 of its std.
        REQUIRE(y[k] == Approx(expected).margin(ch == 2 ? 5e-3 : 1e-4));
      }
  // Training forward leaves the running statistics to the replica manager.
  CHECK(s->running_mean.to_vector() == std::vector<float>(c, 0.0f));
  CHECK(s->running_var.to_vector() == std::vector<float>(c, 1.0f));
}

TEST_CASE("one-pass shifted moments keep the variance of channels whose mean is far from their spread",
          "[batchnorm2d]") {
  // bn_shifted_moments is what the GPU's one-pass statistics finish with
  // (kernels/cuda/batchnorm_cuda.cu); here its sums come from a plain loop.
  auto moments = [](const std::vector<float>& v, float shift) {
    double s1 = 0.0, s2 = 0.0;
    for (float x : v) {
      const double d = static_cast<double>(x) - shift;
      s1 += d;
      s2 += d * d;
    }
    return bn_shifted_moments(s1, s2, static_cast<double>(v.size()), shift);
  };
  for (double mean : {0.0, 1000.0, -3.0e4, 1.0e6}) {
    std::vector<float> v(4099);
    fill_channel(v, 1, 1, static_cast<int64_t>(v.size()), 0, mean, 0.25, 7);
    const DoubleStats ref = reference_stats(v, 1, 1, static_cast<int64_t>(v.size()));
    // The channel's first value (what the kernel shifts by), and a value
    // 1000 standard deviations away, inside the bound bn_math.h states.
    for (float shift : {v[0], static_cast<float>(mean + 250.0)}) {
      const BnMoments m = moments(v, shift);
      INFO("mean " << mean << ", shift " << shift << ": variance " << m.var << " vs " << ref.var[0]);
      CHECK(std::abs(m.mean - ref.mean[0]) <= 1e-9 + 1e-12 * std::abs(ref.mean[0]));
      CHECK(relative(m.var, ref.var[0]) <= 1e-7);
    }
  }
  // Two values, and a constant channel: exact.
  const BnMoments two = moments({3.0f, 5.0f}, 3.0f);
  CHECK(two.mean == 4.0);
  CHECK(two.var == 1.0);
  const BnMoments constant = moments(std::vector<float>(100, 7.5f), 7.5f);
  CHECK(constant.mean == 7.5);
  CHECK(constant.var == 0.0);
  CHECK(bn_shifted_moments(0.0, 0.0, 0.0, 0.0).var == 0.0);
}

TEST_CASE("batchnorm2d on an empty slice writes zero statistics and zero gradients", "[batchnorm2d]") {
  LayerHarness h(std::make_unique<BatchNorm2d>(), {Shape{3, 3, 5}}, 0, 51);
  h.forward(Mode::train);
  BatchNormState* s = h.layer().batch_norm_state();
  CHECK(s->values_per_channel == 0);
  CHECK(s->batch_mean.to_vector() == std::vector<float>(3, 0.0f));
  CHECK(s->batch_var.to_vector() == std::vector<float>(3, 0.0f));
  h.arenas.grads.copy_from(Tensor::from_vector(h.arenas.grads.shape(), std::vector<float>(h.arenas.total(), 7.0f)));
  h.backward(Tensor::zeros(h.output.shape()));
  CHECK(h.arenas.grad(0).to_vector() == std::vector<float>(3, 0.0f));
  CHECK(h.arenas.grad(1).to_vector() == std::vector<float>(3, 0.0f));
}

TEST_CASE("batchnorm_update_running applies the momentum with the unbiased variance", "[batchnorm2d]") {
  Context ctx(Device::cpu());
  BatchNormState s;
  s.name = "bn";
  s.momentum = 0.1f;
  auto reset = [&] {
    s.running_mean = Tensor::from_vector(Shape{2}, {0.0f, 1.0f});
    s.running_var = Tensor::from_vector(Shape{2}, {1.0f, 2.0f});
  };
  Tensor mean = Tensor::from_vector(Shape{2}, {2.0f, -1.0f});
  Tensor var = Tensor::from_vector(Shape{2}, {4.0f, 0.5f});

  reset();
  ops::batchnorm_update_running(ctx, s, mean, var, 5);  // unbiased: 4 * 5/4 = 5 and 0.5 * 5/4 = 0.625
  std::vector<float> rm = s.running_mean.to_vector(), rv = s.running_var.to_vector();
  CHECK(rm[0] == Approx(0.2f));
  CHECK(rm[1] == Approx(0.8f));
  CHECK(rv[0] == Approx(0.9f * 1.0f + 0.1f * 5.0f));
  CHECK(rv[1] == Approx(0.9f * 2.0f + 0.1f * 0.625f));

  reset();
  ops::batchnorm_update_running(ctx, s, mean, var, 1);  // M = 1: the biased value
  rv = s.running_var.to_vector();
  CHECK(rv[0] == Approx(0.9f * 1.0f + 0.1f * 4.0f));
  CHECK(rv[1] == Approx(0.9f * 2.0f + 0.1f * 0.5f));

  Tensor wrong = Tensor::zeros(Shape{3});
  REQUIRE_THROWS_WITH(ops::batchnorm_update_running(ctx, s, wrong, var, 5),
                      Catch::Contains("batchnorm_update_running") && Catch::Contains("[3]"));
}

TEST_CASE("combine_batch_stats of uneven groups equals the statistics of their concatenation", "[batchnorm2d]") {
  const int64_t batch = 7, c = 3, spatial = 15;
  const float eps = 1e-5f;
  std::vector<float> host(batch * c * spatial);
  fill_channel(host, batch, c, spatial, 0, 1000.0, 1.0, 5);  // mean 1000x the std
  fill_channel(host, batch, c, spatial, 1, -0.5, 2.0, 6);
  fill_channel(host, batch, c, spatial, 2, 3.0, 0.1, 7);
  Context ctx(Device::cpu());
  Tensor x = Tensor::from_vector(Shape{batch, c, 3, 5}, host);
  Tensor gamma = Tensor::from_vector(Shape{c}, std::vector<float>(c, 1.0f));
  Tensor beta = Tensor::zeros(Shape{c});

  // Each group's statistics as a replica's training forward computes them.
  auto group_stats = [&](int64_t start, int64_t count) {
    Tensor slice = x.batch_slice(start, count);
    Tensor y = Tensor::empty(slice.shape());
    Tensor mean = Tensor::empty(Shape{c}), var = Tensor::empty(Shape{c});
    Tensor saved_mean = Tensor::empty(Shape{c}), saved_inv_std = Tensor::empty(Shape{c});
    ops::batchnorm_forward_train(ctx, slice, gamma, beta, eps, y, mean, var, saved_mean, saved_inv_std);
    return ops::HostBatchStats{mean.to_vector(), var.to_vector()};
  };
  const DoubleStats ref = reference_stats(host, batch, c, spatial);
  const ops::HostBatchStats whole = group_stats(0, batch);

  auto check = [&](const ops::HostBatchStats& combined) {
    for (int64_t ch = 0; ch < c; ++ch) {
      INFO("channel " << ch << ": combined mean " << combined.mean[ch] << " vs " << ref.mean[ch]
                      << ", variance " << combined.var[ch] << " vs " << ref.var[ch] << " (one group: "
                      << whole.var[ch] << ")");
      CHECK(relative(combined.mean[ch], ref.mean[ch]) <= 1e-6);
      CHECK(relative(combined.var[ch], ref.var[ch]) <= 1e-5);
    }
  };
  SECTION("three groups of 4, 2 and 1 samples") {
    check(ops::combine_batch_stats({4.0 / 7, 2.0 / 7, 1.0 / 7}, {group_stats(0, 4), group_stats(4, 2),
                                                                 group_stats(6, 1)}));
  }
  SECTION("a replica with an empty slice contributes nothing") {
    check(ops::combine_batch_stats({3.0 / 7, 0.0, 4.0 / 7}, {group_stats(0, 3), group_stats(3, 0),
                                                             group_stats(3, 4)}));
  }
  SECTION("one replica gives back its own statistics") {
    ops::HostBatchStats one = ops::combine_batch_stats({1.0}, {whole});
    CHECK(one.mean == whole.mean);
    CHECK(one.var == whole.var);
  }
  SECTION("bad weights are refused") {
    REQUIRE_THROWS_WITH(ops::combine_batch_stats({0.5, 0.4}, {whole, whole}), Catch::Contains("sum to"));
    REQUIRE_THROWS_WITH(ops::combine_batch_stats({1.0}, {whole, whole}), Catch::Contains("1 weights for 2"));
  }
}

TEST_CASE("batchnorm2d rejects bad inputs with the layer's name", "[batchnorm2d]") {
  BatchNorm2d bn;
  bn.name = "bn1";
  REQUIRE_THROWS_WITH(bn.output_shape({Shape{5}}),
                      Catch::Contains("batchnorm2d 'bn1'") && Catch::Contains("[5]") && Catch::Contains("[C, H, W]"));
  REQUIRE_THROWS_WITH(bn.output_shape({Shape{5, 3}}),
                      Catch::Contains("batchnorm2d 'bn1'") && Catch::Contains("[5, 3]"));
  REQUIRE_THROWS_WITH(bn.output_shape({Shape{5, 3, 5}, Shape{5, 3, 5}}),
                      Catch::Contains("batchnorm2d 'bn1'") && Catch::Contains("one input"));
  REQUIRE_THROWS_AS(BatchNorm2d(0.0f), Error);
  REQUIRE_THROWS_AS(BatchNorm2d(1e-5f, 1.5f), Error);

  LayerHarness h(std::make_unique<BatchNorm2d>(), {Shape{5, 3, 5}}, 2, 61);
  h.layer().name = "bn2";
  Tensor four_channels = random_tensor(Shape{2, 4, 3, 5}, 1);
  Tensor out = Tensor::zeros(four_channels.shape());
  REQUIRE_THROWS_WITH(h.layer().forward(h.ctx, {four_channels}, out, Mode::train, {}),
                      Catch::Contains("batchnorm2d 'bn2'") && Catch::Contains("[2, 4, 3, 5]"));
  // Backward needs the statistics of a training forward of that batch.
  h.forward(Mode::eval);
  REQUIRE_THROWS_WITH(h.backward(Tensor::zeros(h.output.shape())),
                      Catch::Contains("batchnorm2d 'bn2'") && Catch::Contains("training-mode forward"));
}
