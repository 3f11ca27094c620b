// The precision modes end to end on the CPU backend: fp32, tf32 (FP32
// arithmetic on the CPU, the same parameters as fp32) and bf16 (mixed precision, bf16 rounding where a GPU
// stores bf16; layers/graph.h) train simple-cnn and resnet20 on a
// Fashion-MNIST subset to the same accuracy (medians over seeds), and N bf16
// replicas train as one within bf16's tolerance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "distributed/replica_manager.h"
#include "kernels/bf16_math.h"
#include "kernels/cpu/thread_pool.h"
#include "layers/models.h"
#include "ops/sgd.h"
#include "support/fashion_training.h"
#include "support/replica_models.h"

using namespace lockstep;

namespace {

using testing::accuracy_after_training;
using testing::fashion_subset;

constexpr int64_t kSteps = 150;  // batches of 32
// Evaluated on 4000 test samples: on 2000, one point is 20 images.
constexpr int64_t kTestSamples = 4000;
// "As accurate as fp32" is a claim about training, not about one draw of the
// weights, so each mode trains from three seeds and the medians are
// compared. On one seed the bf16 and fp32 runs lay 1.15 points apart on an
// AMD EPYC (AVX2, simple-cnn) and resnet20's 1.7 on an Intel Xeon (AVX-512
// and AMX), where oneDNN and OpenBLAS round otherwise. Over seeds 5, 6 and 7
// on that Xeon: simple-cnn fp32 80.7-80.8%, bf16 80.2-80.8% (medians 80.8
// and 80.8); resnet20 fp32 76.1-76.5%, bf16 74.6-76.4% (medians 76.5 and
// 74.85: bf16 1.6 points below after 150 steps, one seed's bf16 runs
// spreading 1.85 points). So the bound is 2.5 points: a bf16 mode that lost
// its FP32 master weights or rounded where it must not lies far below.
constexpr double kPointsFromFp32 = 2.5;
constexpr uint64_t kSeeds[] = {5, 6, 7};

double median_of_three(double a, double b, double c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); }
struct OneThread {
  int saved = cpu::compute_threads();
  OneThread() { cpu::set_compute_threads(1); }
  ~OneThread() { cpu::set_compute_threads(saved); }
};

}  // namespace

TEST_CASE("tf32 and bf16 train simple-cnn and resnet20 to fp32's accuracy on the cpu over three seeds",
          "[precision][bf16][train]") {
  OneThread one_thread;  // the same arithmetic on any machine of a kind
  for (const std::string name : {"simple-cnn", "resnet20"}) {
    double fp32[3], bf16[3];
    for (int i = 0; i < 3; ++i) {
      fp32[i] = accuracy_after_training(name, Precision::fp32, Device::cpu(), kSteps, kTestSamples, kSeeds[i]);
      bf16[i] = accuracy_after_training(name, Precision::bf16, Device::cpu(), kSteps, kTestSamples, kSeeds[i]);
    }
    const double fp32_median = median_of_three(fp32[0], fp32[1], fp32[2]);
    const double bf16_median = median_of_three(bf16[0], bf16[1], bf16[2]);
    INFO(name << " after " << kSteps << " steps of 32, on " << kTestSamples << " test samples, seeds 5, 6, 7: fp32 "
              << fp32[0] << ", " << fp32[1] << ", " << fp32[2] << "% (median " << fp32_median << "), bf16 " << bf16[0]
              << ", " << bf16[1] << ", " << bf16[2] << "% (median " << bf16_median << ")");
    WARN(name << ": fp32 " << fp32[0] << ", " << fp32[1] << ", " << fp32[2] << "; bf16 " << bf16[0] << ", " << bf16[1]
              << ", " << bf16[2]);
    REQUIRE(fp32_median > 60.0);  // it learned: chance is 10%
    REQUIRE(std::fabs(bf16_median - fp32_median) <= kPointsFromFp32);
  }
}

TEST_CASE("tf32 trains simple-cnn and resnet20 on the cpu as fp32 does, bit for bit", "[precision][train]") {
  // The CPU computes tf32 in FP32, as PyTorch's CPU does (runtime/precision.h):
  // a tf32 run that rounded its inputs to tf32's 10 bits of mantissa ends
  // elsewhere after the first step.
  const testing::FashionSubset& data = fashion_subset(kSteps);
  for (const std::string name : {"simple-cnn", "resnet20"}) {
    auto parameters_after = [&](Precision p) {
      ReplicaOptions options;
      options.context.precision = p;
      ReplicaManager replicas(testing::named_model(name, Shape{1, 28, 28}, ModelOptions{.dropout = false}, 5),
                              {Device::cpu()}, options);
      for (int step = 0; step < 5; ++step) replicas.train_step(data.train[step], 0.05f, SgdConfig{0.9f, 5e-4f, false});
      return replicas.model(0).arenas().params.to_vector();
    };
    INFO(name);
    REQUIRE(parameters_after(Precision::tf32) == parameters_after(Precision::fp32));
  }
}

TEST_CASE("bf16 mode computes on bf16 values and keeps fp32 master weights", "[precision][bf16]") {
  // One step of simple-cnn in bf16 and in fp32 from the same start: the
  // logits of bf16 are bf16 values and differ from fp32's by about bf16's
  // precision; the master weights stay FP32 (not all bf16 values), and the
  // bf16 copy the next forward reads is exactly the master weights rounded.
  const testing::FashionSubset& data = fashion_subset(kSteps);
  auto run = [&](Precision p) {
    ReplicaOptions options;
    options.context.precision = p;
    auto manager = std::make_unique<ReplicaManager>(
        testing::named_model("simple-cnn", Shape{1, 28, 28}, ModelOptions{.dropout = false}, 5),
        std::vector<Device>{Device::cpu()}, options);
    manager->train_step(data.train[0], 0.05f, SgdConfig{0.9f, 5e-4f, false});
    return manager;
  };
  auto bf16 = run(Precision::bf16), fp32 = run(Precision::fp32);
  const std::vector<float> lb = bf16->logits(data.train[1]), lf = fp32->logits(data.train[1]);
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < lb.size(); ++i) {
    REQUIRE(lb[i] == round_to_bf16(lb[i]));
    diff += (lb[i] - lf[i]) * (lb[i] - lf[i]);
    norm += lf[i] * lf[i];
  }
  INFO("normwise logit difference " << std::sqrt(diff / norm));
  REQUIRE(std::sqrt(diff / norm) > 1e-4);  // rounded: not the FP32 result
  REQUIRE(std::sqrt(diff / norm) < 5e-2);  // but near it
  ParameterArenas& a = bf16->model(0).arenas();
  REQUIRE(a.params_bf16.defined());
  REQUIRE_FALSE(fp32->model(0).arenas().params_bf16.defined());
  const std::vector<float> w = a.params.to_vector(), wb = a.params_bf16.to_vector();
  int64_t not_bf16 = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    REQUIRE(wb[i] == round_to_bf16(w[i]));
    not_bf16 += w[i] != wb[i];
  }
  REQUIRE(not_bf16 > int64_t(w.size()) / 2);
}

// Gradients are all-reduced in FP32, over the FP32 gradient arena, and the
// bf16 rounding of each sample's activations is the same whatever the split
// (a bf16 all-reduce would add a rounding per replica). One rounding does
// depend on it: a convolution's weight gradient is each replica's own FP32
// sum rounded once to bf16 (as cuDNN writes it on a GPU, which the CPU's
// bf16 mode follows; layers/conv2d.h), so N replicas add up N roundings of
// partial sums where one replica rounds the whole: up to 2^-9 of each
// partial sum, more than that of the total where the partial sums cancel.
// Measured here after five steps: parameters 2.7e-4 apart normwise (2 and 3
// replicas; 6e-9 before the weight gradients were rounded), losses 6.7e-4
// relative; the fp32 run lies 8.6e-4 from the bf16 one (3.2 times as far).
// Bounds: 1e-3 on the parameters and 2e-3 on the losses, and the fp32 run
// at least twice as far from the one replica as the N replicas are.
TEST_CASE("N bf16 replicas train as one within bf16's tolerance", "[precision][bf16][replica]") {
  const int replicas = GENERATE(2, 3);
  ReplicaOptions options;
  options.context.precision = Precision::bf16;
  options.bucket_bytes = 256;
  ReplicaOptions fp32_options = options;
  fp32_options.context.precision = Precision::fp32;
  ReplicaManager one(testing::plain_model, {Device::cpu()}, options);
  ReplicaManager many(testing::plain_model, std::vector<Device>(replicas, Device::cpu()), options);
  ReplicaManager fp32(testing::plain_model, {Device::cpu()}, fp32_options);
  const SgdConfig sgd{0.9f, 1e-3f, false};
  const std::vector<int64_t> batch_sizes = {10, 3, 7, 10, 5};
  for (size_t s = 0; s < batch_sizes.size(); ++s) {
    HostBatch batch = testing::make_batch(batch_sizes[s], 100 + s);
    const StepMetrics a = one.train_step(batch, 0.05f, sgd);
    const StepMetrics b = many.train_step(batch, 0.05f, sgd);
    fp32.train_step(batch, 0.05f, sgd);
    REQUIRE(b.count == a.count);
    REQUIRE(b.loss_sum == Approx(a.loss_sum).epsilon(2e-3));
    REQUIRE(many.replicas_identical());
  }
  const auto distance = [&](ReplicaManager& m) {
    const std::vector<float> p1 = one.model(0).arenas().params.to_vector(), p = m.model(0).arenas().params.to_vector();
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < p1.size(); ++i) {
      diff += double(p[i] - p1[i]) * double(p[i] - p1[i]);
      norm += double(p1[i]) * double(p1[i]);
    }
    return std::sqrt(diff / norm);
  };
  const double to_many = distance(many), to_fp32 = distance(fp32);
  INFO(replicas << " replicas: normwise parameter difference " << to_many << "; fp32's " << to_fp32);
  REQUIRE(to_many <= 1e-3);
  REQUIRE(to_fp32 >= 2 * to_many);
}
