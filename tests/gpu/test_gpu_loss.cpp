#include <catch2/catch.hpp>

#include <cstring>

#include "runtime/cuda/cuda_context.h"
#include "ops/loss.h"
#include "gpu_compare.h"
#include "kernels/cpu/loss_cpu.h"
#include "kernels/cuda/loss_cuda.h"
#include "kernels/float_bits.h"
#include "kernels/loss_math.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;
using lockstep::testing::require_close;

namespace {
std::vector<int32_t> random_labels(int64_t rows, int classes, uint64_t seed) {
  std::vector<float> u = random_values(rows, seed, 0.0f, 1.0f);
  std::vector<int32_t> labels(rows);
  for (int64_t i = 0; i < rows; ++i) labels[i] = std::min(classes - 1, static_cast<int>(u[i] * classes));
  return labels;
}
}  // namespace

TEST_CASE("gpu softmax cross-entropy equals the cpu reference on odd shapes", "[gpu][loss]") {
  Context ctx(Device::cuda(0));
  const float scale = 1.0f / 7.0f;
  for (int64_t rows : {1, 3, 37, 1000, 9001}) {
    for (int classes : {1, 2, 10, 33, 1000}) {
      if (rows * classes > 4'000'000) continue;
      INFO("rows " << rows << ", classes " << classes);
      std::vector<float> logits = random_values(rows * classes, rows * 131 + classes, -6.0f, 6.0f);
      std::vector<int32_t> labels = random_labels(rows, classes, rows + 17 * classes);
      std::vector<float> expected_grad(logits.size());
      cpu::LossSums expected =
          cpu::softmax_cross_entropy(logits.data(), labels.data(), rows, classes, scale, expected_grad.data());

      Tensor g_logits = Tensor::from_vector(Shape{rows, classes}, logits, Device::cuda(0));
      Tensor g_labels = Tensor::from_labels(labels, Device::cuda(0));
      Tensor g_grad = Tensor::empty(Shape{rows, classes}, Device::cuda(0));
      StepMetrics m = ops::softmax_cross_entropy(ctx, g_logits, g_labels, scale, &g_grad);
      REQUIRE(m.count == rows);
      REQUIRE(m.correct == expected.correct);
      // A row's loss carries a few ulps of its log-sum-exp (the two sum the
      // exponentials in different orders): the margin covers rows whose loss is tiny.
      REQUIRE(m.loss_sum == Approx(expected.loss_sum).epsilon(1e-5).margin(2e-6 * rows));
      // Gradients are scale * (p - onehot): compared relative to scale, since
      // the label's entry p - 1 loses digits when p is near 1.
      require_close(g_grad.to_vector(), expected_grad, 1e-5, 1e-5 * scale);

      StepMetrics without_grad = ops::softmax_cross_entropy(ctx, g_logits, g_labels, scale, nullptr);
      REQUIRE(std::memcmp(&without_grad.loss_sum, &m.loss_sum, sizeof(double)) == 0);  // same bits: fixed order
      REQUIRE(without_grad.correct == m.correct);
    }
  }
}

TEST_CASE("gpu softmax cross-entropy with label smoothing equals the cpu reference, queued and not", "[gpu][loss]") {
  Context ctx(Device::cuda(0));
  const float scale = 1.0f / 5.0f;
  for (float smoothing : {0.1f, 0.5f}) {
    for (int64_t rows : {1, 37, 1000}) {
      for (int classes : {1, 10, 33, 1000}) {
        INFO("smoothing " << smoothing << ", rows " << rows << ", classes " << classes);
        std::vector<float> logits = random_values(rows * classes, rows * 7 + classes, -6.0f, 6.0f);
        std::vector<int32_t> labels = random_labels(rows, classes, rows + 3 * classes);
        std::vector<float> expected_grad(logits.size());
        cpu::LossSums expected = cpu::softmax_cross_entropy(logits.data(), labels.data(), rows, classes, scale,
                                                            expected_grad.data(), smoothing);
        Tensor g_logits = Tensor::from_vector(Shape{rows, classes}, logits, Device::cuda(0));
        Tensor g_labels = Tensor::from_labels(labels, Device::cuda(0));
        Tensor g_grad = Tensor::empty(Shape{rows, classes}, Device::cuda(0));
        StepMetrics m = ops::softmax_cross_entropy(ctx, g_logits, g_labels, scale, &g_grad, smoothing);
        REQUIRE(m.correct == expected.correct);
        // As above, plus the mean logit, summed in another order by the lanes.
        REQUIRE(m.loss_sum == Approx(expected.loss_sum).epsilon(1e-5).margin(4e-6 * rows));
        require_close(g_grad.to_vector(), expected_grad, 1e-5, 1e-5 * scale);
        // The training step's queued pass gives the same bits.
        Tensor q_grad = Tensor::empty(Shape{rows, classes}, Device::cuda(0));
        StepMetrics q = ops::softmax_cross_entropy_queued(ctx, g_logits, g_labels, scale, &q_grad, smoothing)();
        REQUIRE(std::memcmp(&q.loss_sum, &m.loss_sum, sizeof(double)) == 0);
        REQUIRE(q_grad.to_vector() == g_grad.to_vector());
      }
    }
  }
}

// Mixup's and CutMix's targets (ops/loss.h): rows of (a, b, lam bits), a
// lam per row here (the loader gives one per batch) so every row differs.
TEST_CASE("gpu softmax cross-entropy on mixed targets equals the cpu reference, queued and not", "[gpu][loss][mixup]") {
  Context ctx(Device::cuda(0));
  const float scale = 1.0f / 3.0f;
  for (float smoothing : {0.0f, 0.1f}) {
    for (int64_t rows : {1, 37, 1000}) {
      for (int classes : {1, 10, 33, 1000}) {
        INFO("smoothing " << smoothing << ", rows " << rows << ", classes " << classes);
        std::vector<float> logits = random_values(rows * classes, rows * 5 + classes, -6.0f, 6.0f);
        const std::vector<int32_t> a = random_labels(rows, classes, rows + 3 * classes);
        const std::vector<int32_t> b = random_labels(rows, classes, rows + 5 * classes + 1);
        const std::vector<float> lam = random_values(rows, rows + 11, 0.0f, 1.0f);
        std::vector<int32_t> targets;
        for (int64_t r = 0; r < rows; ++r)
          for (int32_t v : {a[r], b[r], static_cast<int32_t>(float_bits(lam[r]))}) targets.push_back(v);
        std::vector<float> expected_grad(logits.size());
        cpu::LossSums expected = cpu::softmax_cross_entropy(logits.data(), targets.data(), rows, classes, scale,
                                                            expected_grad.data(), smoothing, true);
        Tensor g_logits = Tensor::from_vector(Shape{rows, classes}, logits, Device::cuda(0));
        Tensor g_targets = Tensor::from_labels(targets, Device::cuda(0)).reshape(Shape{rows, kMixedTargetWidth});
        Tensor g_grad = Tensor::empty(Shape{rows, classes}, Device::cuda(0));
        StepMetrics m = ops::softmax_cross_entropy(ctx, g_logits, g_targets, scale, &g_grad, smoothing);
        REQUIRE(m.correct == expected.correct);
        REQUIRE(m.loss_sum == Approx(expected.loss_sum).epsilon(1e-5).margin(4e-6 * rows));
        require_close(g_grad.to_vector(), expected_grad, 1e-5, 1e-5 * scale);
        Tensor q_grad = Tensor::empty(Shape{rows, classes}, Device::cuda(0));
        StepMetrics q = ops::softmax_cross_entropy_queued(ctx, g_logits, g_targets, scale, &q_grad, smoothing)();
        REQUIRE(std::memcmp(&q.loss_sum, &m.loss_sum, sizeof(double)) == 0);
        REQUIRE(q_grad.to_vector() == g_grad.to_vector());
      }
    }
  }
  // A bad label b is named as a bad label a is.
  Tensor logits = Tensor::from_vector(Shape{2, 3}, random_values(6, 3), Device::cuda(0));
  const int32_t half = static_cast<int32_t>(float_bits(0.5f));
  Tensor bad = Tensor::from_labels({0, 1, half, 2, 5, half}, Device::cuda(0)).reshape(Shape{2, kMixedTargetWidth});
  REQUIRE_THROWS_WITH(ops::softmax_cross_entropy_queued(ctx, logits, bad, 1.0f, nullptr)(),
                      Catch::Contains("label 5 of sample 1") && Catch::Contains("[0, 3)"));
}

TEST_CASE("gpu softmax cross-entropy names a label out of range", "[gpu][loss]") {
  Context ctx(Device::cuda(0));
  Tensor logits = Tensor::from_vector(Shape{4, 3}, random_values(12, 3), Device::cuda(0));
  Tensor grad = Tensor::empty(Shape{4, 3}, Device::cuda(0));
  SECTION("too large") {
    Tensor labels = Tensor::from_labels({0, 2, 3, 7}, Device::cuda(0));
    REQUIRE_THROWS_WITH(ops::softmax_cross_entropy(ctx, logits, labels, 1.0f, &grad),
                        Catch::Contains("label 3 of sample 2") && Catch::Contains("[0, 3)"));
  }
  SECTION("negative") {
    Tensor labels = Tensor::from_labels({0, -1, 1, 1}, Device::cuda(0));
    REQUIRE_THROWS_WITH(ops::softmax_cross_entropy(ctx, logits, labels, 1.0f, nullptr),
                        Catch::Contains("label -1 of sample 1"));
  }
  // The context stays usable after the error.
  Tensor labels = Tensor::from_labels({0, 1, 2, 0}, Device::cuda(0));
  StepMetrics m = ops::softmax_cross_entropy(ctx, logits, labels, 1.0f, &grad);
  REQUIRE(m.count == 4);
}

TEST_CASE("gpu softmax cross-entropy picks the first maximum on ties, like the cpu", "[gpu][loss]") {
  Context ctx(Device::cuda(0));
  // Row 0: classes 1 and 40 tie (argmax 1); row 1: all equal (argmax 0).
  const int classes = 41;
  std::vector<float> logits(2 * classes, 0.0f);
  logits[1] = logits[40] = 3.0f;
  std::vector<int32_t> labels = {40, 0};
  cpu::LossSums expected = cpu::softmax_cross_entropy(logits.data(), labels.data(), 2, classes, 1.0f, nullptr);
  Tensor g_logits = Tensor::from_vector(Shape{2, classes}, logits, Device::cuda(0));
  Tensor g_labels = Tensor::from_labels(labels, Device::cuda(0));
  StepMetrics m = ops::softmax_cross_entropy(ctx, g_logits, g_labels, 1.0f, nullptr);
  REQUIRE(expected.correct == 1);
  REQUIRE(m.correct == expected.correct);
}
