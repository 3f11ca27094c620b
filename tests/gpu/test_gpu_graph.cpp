// Whole models on the GPU against the CPU: one train_step of resnet20 (loss,
// accuracy, every gradient, every batch statistic), evaluation and logits,
// a few optimizer steps through the replica manager, and the out-of-memory
// error of a batch far too large for the device.
#include <catch2/catch.hpp>

#include <string>

#include "base/error.h"
#include "distributed/replica_manager.h"
#include "gpu_compare.h"
#include "layers/models.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::reference_options;
using lockstep::testing::random_values;
using lockstep::testing::require_close_scaled;

namespace {

std::unique_ptr<Graph> make_model(const std::string& name, const Shape& input, Device device) {
  auto g = build_model(name, input, 10, ModelOptions{.dropout = false});
  g->finalize(device, 5);
  return g;
}

HostBatch make_batch(int64_t count, const Shape& sample, uint64_t seed) {
  HostBatch b;
  b.count = count;
  b.images = Tensor::from_vector(Shape{count, sample[0], sample[1], sample[2]},
                                 random_values(count * sample.numel(), seed));
  std::vector<int32_t> labels(count);
  for (int64_t i = 0; i < count; ++i) labels[i] = static_cast<int32_t>((seed + 3 * i) % 10);
  b.labels = Tensor::from_labels(labels);
  return b;
}

// Gradients pass through every layer twice: 1e-4 of each value plus 1e-3 of
// each parameter's RMS gradient leaves room for the rounding of ~40 float ops.
void compare_per_parameter(Model& gpu, Model& cpu, const Tensor& (*pick)(ParameterArenas&), const char* what) {
  ParameterArenas& g = gpu.arenas();
  ParameterArenas& c = cpu.arenas();
  std::vector<float> gv = pick(g).to_vector(), cv = pick(c).to_vector();
  for (const ParamEntry& e : c.entries()) {
    std::vector<float> gs(gv.begin() + e.offset, gv.begin() + e.offset + e.shape.numel());
    std::vector<float> cs(cv.begin() + e.offset, cv.begin() + e.offset + e.shape.numel());
    INFO(what << " of " << e.name);
    double floor = lockstep::testing::rms(cs);
    for (size_t i = 0; i < cs.size(); ++i) {
      double tolerance = 1e-4 * std::abs(cs[i]) + 1e-3 * floor;
      INFO("element " << i << ": gpu " << gs[i] << ", cpu " << cs[i]);
      REQUIRE(std::abs(double(gs[i]) - double(cs[i])) <= tolerance);
    }
  }
}

const Tensor& grads_of(ParameterArenas& a) { return a.grads; }
const Tensor& params_of(ParameterArenas& a) { return a.params; }

}  // namespace

TEST_CASE("resnet20 train_step on the gpu equals the cpu", "[gpu][graph]") {
  const Shape sample{3, 16, 16};
  auto cpu = make_model("resnet20", sample, Device::cpu());
  auto gpu = make_model("resnet20", sample, Device::cuda(0));
  REQUIRE(gpu->arenas().params.to_vector() == cpu->arenas().params.to_vector());
  Context cpu_ctx(Device::cpu()), gpu_ctx(Device::cuda(0), reference_options());
  HostBatch batch = make_batch(5, sample, 1);
  Tensor images = batch.images.to(Device::cuda(0)), labels = batch.labels.to(Device::cuda(0));

  StepMetrics c = cpu->train_step(cpu_ctx, {}, batch.images, batch.labels, 1.0f / 5).metrics();
  StepMetrics g = gpu->train_step(gpu_ctx, {}, images, labels, 1.0f / 5).metrics();
  REQUIRE(g.count == c.count);
  REQUIRE(g.loss_sum == Approx(c.loss_sum).epsilon(1e-4));
  REQUIRE(g.correct == c.correct);
  compare_per_parameter(*gpu, *cpu, grads_of, "gradient");
  auto gpu_bn = gpu->batch_norms(), cpu_bn = cpu->batch_norms();
  REQUIRE(gpu_bn.size() == cpu_bn.size());
  for (size_t i = 0; i < cpu_bn.size(); ++i) {
    INFO("batch norm " << cpu_bn[i]->name);
    require_close_scaled(gpu_bn[i]->batch_mean.to_vector(), cpu_bn[i]->batch_mean.to_vector(), 1e-4, "batch mean");
    require_close_scaled(gpu_bn[i]->batch_var.to_vector(), cpu_bn[i]->batch_var.to_vector(), 1e-4, "batch variance");
  }

  StepMetrics ce = cpu->evaluate(cpu_ctx, batch.images, batch.labels);
  StepMetrics ge = gpu->evaluate(gpu_ctx, images, labels);
  REQUIRE(ge.loss_sum == Approx(ce.loss_sum).epsilon(1e-4));
  require_close_scaled(gpu->logits(gpu_ctx, images).to_vector(), cpu->logits(cpu_ctx, batch.images).to_vector(), 1e-4,
                       "logits");
}

TEST_CASE("simple-cnn and resnet20 train the same on one gpu replica as on the cpu", "[gpu][graph][replica]") {
  for (std::string name : {"simple-cnn", "resnet20"}) {
    INFO(name);
    const Shape sample{3, 12, 12};
    ModelFactory factory = [&](Device d) -> std::unique_ptr<Model> { return make_model(name, sample, d); };
    ReplicaManager cpu(factory, {Device::cpu()});
    ReplicaOptions strict;
    strict.context = reference_options();
    ReplicaManager gpu(factory, {Device::cuda(0)}, strict);
    SgdConfig sgd{0.9f, 5e-4f, false};
    for (int step = 0; step < 3; ++step) {
      HostBatch batch = make_batch(step == 2 ? 3 : 6, sample, 10 + step);
      StepMetrics c = cpu.train_step(batch, 0.02f, sgd);
      StepMetrics g = gpu.train_step(batch, 0.02f, sgd);
      REQUIRE(g.loss_sum == Approx(c.loss_sum).epsilon(1e-3));
    }
    compare_per_parameter(gpu.model(0), cpu.model(0), params_of, "parameter");
    require_close_scaled(gpu.model(0).state_arena().to_vector(), cpu.model(0).state_arena().to_vector(), 1e-4,
                         "running statistics");
  }
}

TEST_CASE("a batch too large for the gpu fails with an out-of-memory error that says what to do", "[gpu][oom]") {
  const Shape sample{3, 32, 32};
  const int64_t batch = 200000;  // ~2.5 GB of images; the activations of resnet20 need hundreds of GB
  {
    auto model = make_model("resnet20", sample, Device::cuda(0));
    Context ctx(Device::cuda(0));
    Tensor images = Tensor::empty(Shape{batch, 3, 32, 32}, Device::cuda(0));
    Tensor labels = Tensor::zeros(Shape{batch}, Device::cuda(0), DType::i32);
    REQUIRE_THROWS_WITH(model->train_step(ctx, {}, images, labels, 1.0f / batch),
                        Catch::Contains("out of memory on cuda:0") && Catch::Contains("smaller batch"));
  }
  // The memory came back: a fresh model still trains.
  auto model = make_model("resnet20", sample, Device::cuda(0));
  Context ctx(Device::cuda(0));
  HostBatch small = make_batch(4, sample, 3);
  StepMetrics m =
      model->train_step(ctx, {}, small.images.to(Device::cuda(0)), small.labels.to(Device::cuda(0)), 0.25f).metrics();
  REQUIRE(m.count == 4);
}
