#include "support/replica_models.h"

#include <algorithm>
#include <cstring>

#include "kernels/augment_math.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/pool.h"
#include "layers/relu.h"
#include "runtime/allocator.h"
#include "support/layer_harness.h"

namespace lockstep::testing {

std::unique_ptr<Model> plain_model(Device device) {
  auto g = std::make_unique<Graph>(replica_sample_shape, replica_classes, "test-plain");
  g->then("conv1", std::make_unique<Conv2d>(3, 3, 1, 1));
  g->then("relu1", std::make_unique<ReLU>());
  g->then("conv2", std::make_unique<Conv2d>(3, 3, 1, 1));
  g->add("skip", std::make_unique<Add>(), {"conv2", "input"});
  g->then("flat", std::make_unique<Flatten>());
  g->then("fc", std::make_unique<Linear>(replica_classes));
  g->finalize(device, 11);
  return g;
}

// Without synchronised BN in the forward pass, a BN layer behind another one
// sees inputs normalised per replica, so its statistics differ from one
// replica's (as in PyTorch DDP without SyncBatchNorm): both BN layers here
// read the input directly or through a convolution.
std::unique_ptr<Model> bn_model(Device device) {
  auto g = std::make_unique<Graph>(replica_sample_shape, replica_classes, "test-bn");
  g->add("bn0", std::make_unique<BatchNorm2d>(), {"input"});
  g->add("conv1", std::make_unique<Conv2d>(3, 3, 1, 1, false), {"input"});
  g->then("bn1", std::make_unique<BatchNorm2d>());
  g->add("sum", std::make_unique<Add>(), {"bn0", "bn1"});
  g->then("relu1", std::make_unique<ReLU>());
  g->then("pool", std::make_unique<GlobalAvgPool>());
  g->then("flat", std::make_unique<Flatten>());
  g->then("fc", std::make_unique<Linear>(replica_classes));
  g->finalize(device, 12);
  return g;
}

HostBatch make_batch(int64_t count, uint64_t seed, float channel0_mean) {
  const Shape& s = replica_sample_shape;
  std::vector<float> x = random_values(count * s.numel(), seed);
  const int64_t plane = s[1] * s[2];
  for (int64_t n = 0; n < count; ++n)
    for (int64_t i = 0; i < plane; ++i) x[n * s.numel() + i] += channel0_mean;
  HostBatch b;
  b.count = count;
  b.images = Tensor::empty_with(Shape{count, s[0], s[1], s[2]}, pinned_host_allocator());
  std::copy(x.begin(), x.end(), b.images.data());
  b.labels = Tensor::empty_with(Shape{count}, pinned_host_allocator(), DType::i32);
  for (int64_t i = 0; i < count; ++i) b.labels.labels()[i] = static_cast<int32_t>((seed + i * 7) % replica_classes);
  return b;
}

HostBatch pinned_batch(int64_t count, const Shape& sample, uint64_t seed) {
  HostBatch b;
  b.count = count;
  b.images = Tensor::empty_with(Shape{count, sample[0], sample[1], sample[2]}, pinned_host_allocator());
  for (int64_t i = 0; i < b.images.numel(); ++i)
    b.images.data()[i] = static_cast<float>(((i * 2654435761u + seed) % 1000) / 500.0 - 1.0);
  b.labels = Tensor::empty_with(Shape{count}, pinned_host_allocator(), DType::i32);
  for (int64_t i = 0; i < count; ++i) b.labels.labels()[i] = static_cast<int32_t>((seed + 3 * i) % 10);
  return b;
}

HostBatch pinned_byte_batch(int64_t count, const Shape& sample, uint64_t seed) {
  HostBatch b = pinned_batch(count, sample, seed);
  auto pinned = pinned_host_allocator();
  b.images = Tensor::empty_with(Shape{count, sample[0], sample[1], sample[2]}, pinned, DType::u8);
  for (int64_t i = 0; i < b.images.numel(); ++i)
    b.images.u8_data()[i] = static_cast<uint8_t>((i * 2654435761u + seed) % 256);
  constexpr int64_t row = static_cast<int64_t>(sizeof(AugmentDraw));
  b.draws = Tensor::empty_with(Shape{count, row}, pinned, DType::u8);
  b.crop_padding = 2;
  for (int64_t i = 0; i < count; ++i) {
    AugmentDraw d;
    d.dy = static_cast<int64_t>((seed + i) % 5);
    d.dx = static_cast<int64_t>((seed + 3 * i) % 5);
    d.flip = (seed + i) % 2 == 1;
    std::memcpy(b.draws.u8_data() + i * row, &d, sizeof d);
  }
  b.mean = Tensor::empty_with(Shape{sample[0]}, pinned);
  b.stddev = Tensor::empty_with(Shape{sample[0]}, pinned);
  for (int64_t c = 0; c < sample[0]; ++c) {
    b.mean.data()[c] = 0.4f + 0.05f * static_cast<float>(c);
    b.stddev.data()[c] = 0.25f;
  }
  return b;
}

std::vector<Device> cuda_devices(int devices) {
  std::vector<Device> on;
  for (int d = 0; d < devices; ++d) on.push_back(Device::cuda(d));
  return on;
}

ModelFactory small_cnn_for_fine_tuning(const Shape& sample, uint64_t init_seed, bool frozen) {
  return [=](Device device) -> std::unique_ptr<Model> {
    std::unique_ptr<Graph> g =
        build_model_from_spec(model_spec("small-cnn", sample, 10, {.dropout = false}), device, init_seed);
    for (BatchNormState* bn : g->batch_norms()) {
      const int64_t c = bn->running_mean.numel();
      bn->running_mean.copy_from(random_tensor(Shape{c}, init_seed + 1, -0.5f, 0.5f));
      bn->running_var.copy_from(random_tensor(Shape{c}, init_seed + 2, 0.5f, 2.0f));
    }
    g->freeze_backbone(frozen);
    return g;
  };
}

ModelFactory named_model(const std::string& name, const Shape& sample, ModelOptions options, uint64_t init_seed) {
  return [=](Device device) -> std::unique_ptr<Model> {
    auto g = build_model(name, sample, 10, options);
    g->finalize(device, init_seed);
    return g;
  };
}

ModelFactory with_memory_planning(ModelFactory make, bool on) {
  return [make = std::move(make), on](Device device) {
    std::unique_ptr<Model> m = make(device);
    dynamic_cast<Graph&>(*m).set_memory_planning(on);
    return m;
  };
}

}  // namespace lockstep::testing
