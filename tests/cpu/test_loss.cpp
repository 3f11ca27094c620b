// Softmax cross-entropy on the CPU (ops/loss.h, kernels/cpu/loss_cpu.h): with
// label smoothing against PyTorch's CrossEntropyLoss(label_smoothing=0.2),
// against finite differences of its own loss, and without smoothing bit for
// bit what it always was.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "kernels/cpu/loss_cpu.h"
#include "ops/loss.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;

namespace {

// Three rows of four classes and what PyTorch 1.13 gives for them in double:
// torch.nn.CrossEntropyLoss(label_smoothing=0.2, reduction='sum'), its value
// and the gradient of the sum.
const std::vector<float> kLogits = {1.5f, -0.25f, 0.75f, 2.0f, -1.0f, 0.5f, 3.0f, 0.0f, 0.1f, 0.2f, 0.3f, 0.4f};
const std::vector<int32_t> kLabels = {2, 0, 3};
constexpr double kTorchLoss = 6.979824895705252;
const std::vector<double> kTorchGrad = {0.2535028692397654,  0.002740890436318824, -0.7066353959102052,
                                        0.4503916362341209,  -0.8340759566502991,  0.021366611035944536,
                                        0.8194233079412684,  -0.006713962326913657, 0.1638382203659844,
                                        0.18632778232153768, 0.21118259215507557,  -0.5613485948425978};

}  // namespace

TEST_CASE("softmax cross-entropy with label smoothing equals PyTorch's", "[loss]") {
  std::vector<float> grad(kLogits.size());
  const LossSums sums = cpu::softmax_cross_entropy(kLogits.data(), kLabels.data(), 3, 4, 1.0f, grad.data(), 0.2f);
  REQUIRE(sums.loss_sum == Approx(kTorchLoss).epsilon(1e-6));
  for (size_t i = 0; i < grad.size(); ++i) REQUIRE(grad[i] == Approx(kTorchGrad[i]).margin(1e-6));
  REQUIRE(sums.correct == 1);  // row 2 alone has its label as its largest logit
}

TEST_CASE("the smoothed loss's gradient equals its finite differences", "[loss]") {
  const int64_t rows = 5;
  const int classes = 7;
  std::vector<float> logits = random_values(rows * classes, 11, -3.0f, 3.0f);
  const std::vector<int32_t> labels = {0, 6, 3, 3, 1};
  const float scale = 0.25f, smoothing = 0.3f;
  std::vector<float> grad(logits.size());
  cpu::softmax_cross_entropy(logits.data(), labels.data(), rows, classes, scale, grad.data(), smoothing);
  const float h = 1e-2f;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float kept = logits[i];
    logits[i] = kept + h;
    const double up = cpu::softmax_cross_entropy(logits.data(), labels.data(), rows, classes, 1.0f, nullptr, smoothing).loss_sum;
    logits[i] = kept - h;
    const double down = cpu::softmax_cross_entropy(logits.data(), labels.data(), rows, classes, 1.0f, nullptr, smoothing).loss_sum;
    logits[i] = kept;
    INFO("logit " << i);
    REQUIRE(grad[i] == Approx(scale * (up - down) / (2.0 * h)).margin(2e-4));
  }
}

TEST_CASE("without smoothing the loss and its gradient keep their bits", "[loss]") {
  const int64_t rows = 9;
  const int classes = 10;
  const std::vector<float> logits = random_values(rows * classes, 5, -6.0f, 6.0f);
  std::vector<int32_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>((r * 7) % classes);
  std::vector<float> grad(logits.size()), grad0(logits.size());
  const LossSums plain = cpu::softmax_cross_entropy(logits.data(), labels.data(), rows, classes, 0.5f, grad.data());
  const LossSums zero =
      cpu::softmax_cross_entropy(logits.data(), labels.data(), rows, classes, 0.5f, grad0.data(), 0.0f);
  double expected = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits.data() + r * classes;
    expected += static_cast<double>(row_logsumexp(z, classes, row_max(z, classes)) - z[labels[r]]);
  }
  REQUIRE(std::memcmp(&plain.loss_sum, &expected, sizeof(double)) == 0);
  REQUIRE(std::memcmp(&zero.loss_sum, &plain.loss_sum, sizeof(double)) == 0);
  REQUIRE(std::memcmp(grad.data(), grad0.data(), grad.size() * sizeof(float)) == 0);
}

TEST_CASE("label smoothing below 0 or from 1 up is refused", "[loss]") {
  Context ctx(Device::cpu());
  Tensor logits = Tensor::from_vector(Shape{1, 3}, {0.0f, 1.0f, 2.0f});
  Tensor labels = Tensor::from_labels({1});
  REQUIRE_THROWS_WITH(ops::softmax_cross_entropy(ctx, logits, labels, 1.0f, nullptr, 1.0f),
                      Catch::Contains("label smoothing 1 outside [0, 1)"));
  REQUIRE_THROWS_WITH(ops::softmax_cross_entropy(ctx, logits, labels, 1.0f, nullptr, -0.1f),
                      Catch::Contains("outside [0, 1)"));
}
