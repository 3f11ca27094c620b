// Model builders: shapes, parameter counts (against PyTorch's), that two of
// them learn a small separable problem on the CPU, and clear errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>

#include "base/error.h"
#include "distributed/replica_manager.h"
#include "layers/models.h"

using namespace lockstep;

namespace {

int64_t parameter_count(Model& model) {
  int64_t n = 0;
  for (const ParamEntry& e : model.arenas().entries()) n += e.shape.numel();
  return n;
}

// Trainable parameters of the PyTorch twins of our models (bench/peers/
// pytorch_train.py, whose names tests/torch/golden.py checks against ours),
// printed by tests/torch/param_counts.py with torch 1.13, 10 classes. BN
// running statistics are not parameters on either side.
const std::map<std::string, int64_t> torch_counts_3x32x32 = {
    {"mlp", 855050}, {"simple-cnn", 121738}, {"resnet18", 11173962}, {"resnet20", 272474}, {"vgg11-bn", 9228362}};
const std::map<std::string, int64_t> torch_counts_1x28x28 = {
    {"mlp", 269322}, {"simple-cnn", 106506}, {"resnet18", 11172810}, {"resnet20", 272186}, {"vgg11-bn", 9227210}};

// A small separable problem: class k is a fixed random +-1 pattern, each
// sample that pattern plus Gaussian noise.
HostBatch pattern_data(const Shape& sample, int64_t classes, int64_t count, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> coin(0, 1);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  const int64_t per = sample.numel();
  std::vector<float> patterns(classes * per);
  for (float& v : patterns) v = coin(gen) ? 1.0f : -1.0f;
  std::vector<float> images(count * per);
  std::vector<int32_t> labels(count);
  for (int64_t n = 0; n < count; ++n) {
    labels[n] = static_cast<int32_t>(n % classes);
    for (int64_t i = 0; i < per; ++i) images[n * per + i] = patterns[labels[n] * per + i] + noise(gen);
  }
  return HostBatch{Tensor::from_vector(Shape{count, sample[0], sample[1], sample[2]}, images),
                   Tensor::from_labels(labels), count};
}

HostBatch slice(const HostBatch& all, int64_t start, int64_t count) {
  return HostBatch{all.images.batch_slice(start, count), all.labels.batch_slice(start, count), count};
}

}  // namespace

TEST_CASE("every model builds for 1x28x28 and 3x32x32 with PyTorch's parameter count and [N, classes] logits",
          "[models]") {
  for (const std::string& name : model_names()) {
    for (const Shape& input : {Shape{1, 28, 28}, Shape{3, 32, 32}}) {
      DYNAMIC_SECTION(name << " " << input.str()) {
        auto model = build_model(name, input, 10);
        model->finalize(Device::cpu(), 3);
        REQUIRE(model->input_shape() == input);
        REQUIRE(model->num_classes() == 10);
        const auto& counts = input[0] == 3 ? torch_counts_3x32x32 : torch_counts_1x28x28;
        REQUIRE(parameter_count(*model) == counts.at(name));
        Context ctx(Device::cpu());
        Tensor images = Tensor::zeros(Shape{2, input[0], input[1], input[2]});
        Tensor logits = model->logits(ctx, images);
        REQUIRE(logits.shape() == Shape{2, 10});
        for (float v : logits.to_vector()) REQUIRE(std::isfinite(v));
      }
    }
  }
}

TEST_CASE("a model rebuilt from its spec has the same layout and, with the same seed, the same weights", "[models]") {
  auto a = build_model("resnet20", Shape{3, 8, 8}, 4, {.dropout = false});
  a->finalize(Device::cpu(), 9);
  auto b = build_model_from_spec(a->spec(), Device::cpu(), 9);
  REQUIRE(b->spec() == a->spec());
  REQUIRE(b->arenas().total() == a->arenas().total());
  REQUIRE(b->arenas().params.to_vector() == a->arenas().params.to_vector());
}

TEST_CASE("resnet20 and simple-cnn learn a small separable problem on the CPU", "[models][train]") {
  // A functional check, not a timing: the loss of a whole epoch must fall to a
  // fifth of the first step's within a bounded number of epochs.
  const std::string name = GENERATE(as<std::string>{}, "resnet20", "simple-cnn");
  const Shape sample{1, 12, 12};
  const int64_t classes = 4, count = 64, batch = 32;
  const int max_epochs = 30;
  HostBatch data = pattern_data(sample, classes, count, 5);
  ReplicaManager manager([&](Device d) { return build_model_from_spec(model_spec(name, sample, classes, {}), d, 17); },
                         {Device::cpu()});
  const SgdConfig sgd{0.9f, 5e-4f, false};
  double first_loss = -1.0, epoch_loss = 0.0;
  int epoch = 0;
  for (; epoch < max_epochs; ++epoch) {
    double sum = 0.0;
    for (int64_t start = 0; start < count; start += batch) {
      StepMetrics m = manager.train_step(slice(data, start, batch), 0.05f, sgd);
      if (first_loss < 0) first_loss = m.loss_sum / double(m.count);
      sum += m.loss_sum;
    }
    epoch_loss = sum / double(count);
    if (epoch_loss * 5.0 <= first_loss) break;
  }
  INFO(name << ": first step's loss " << first_loss << ", epoch " << epoch << "'s loss " << epoch_loss);
  REQUIRE(epoch < max_epochs);
  // Inference mode (running statistics, no dropout) classifies the training set.
  StepMetrics eval = manager.evaluate(data);
  INFO("inference accuracy " << double(eval.correct) / double(eval.count));
  REQUIRE(eval.correct >= count * 9 / 10);
}

TEST_CASE("model builders reject unknown names and impossible inputs with clear errors", "[models]") {
  REQUIRE_THROWS_AS(build_model("resnet21", Shape{3, 32, 32}, 10), Error);
  REQUIRE_THROWS_WITH(build_model("resnet21", Shape{3, 32, 32}, 10),
                      Catch::Contains("unknown model 'resnet21'") && Catch::Contains("resnet20"));
  // 2x2 is smaller than the first 3x3 'valid' convolution.
  REQUIRE_THROWS_WITH(build_model("simple-cnn", Shape{1, 2, 2}, 10),
                      Catch::Contains("conv1") && Catch::Contains("[1, 2, 2]"));
  // 8x8 survives conv1 and pool1 but leaves pool2 a 1x1 image.
  REQUIRE_THROWS_WITH(build_model("simple-cnn", Shape{1, 8, 8}, 10), Catch::Contains("pool2"));
  REQUIRE_THROWS_WITH(build_model("resnet20", Shape{3, 32}, 10), Catch::Contains("[C, H, W]"));
  REQUIRE_THROWS_WITH(build_model("mlp", Shape{1, 28, 28}, 1), Catch::Contains("at least 2 classes"));
  REQUIRE_THROWS_WITH(build_model_from_spec("resnet20 3by32by32 10", Device::cpu(), 0),
                      Catch::Contains("cannot read model spec"));
}
