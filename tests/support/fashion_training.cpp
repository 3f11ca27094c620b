#include "support/fashion_training.h"

#include <catch2/catch.hpp>

#include "cpu/test_data_util.h"
#include "data/open_dataset.h"
#include "distributed/replica_manager.h"
#include "layers/models.h"
#include "ops/sgd.h"
#include "runtime/allocator.h"
#include "support/replica_models.h"

namespace lockstep::testing {
namespace {

// Samples [first, first + count) of `set`, normalised by Fashion-MNIST's
// mean and standard deviation, in pinned host memory.
HostBatch fashion_batch(const data::Dataset& set, int64_t first, int64_t count) {
  const Shape sample = set.sample_shape();
  HostBatch b;
  b.count = count;
  b.images = Tensor::empty_with(Shape{count, sample[0], sample[1], sample[2]}, pinned_host_allocator());
  b.labels = Tensor::empty_with(Shape{count}, pinned_host_allocator(), DType::i32);
  for (int64_t i = 0; i < count; ++i) {
    float* out = b.images.data() + i * sample.numel();
    set.read(first + i, out);
    for (int64_t j = 0; j < sample.numel(); ++j) out[j] = (out[j] - 0.286f) / 0.353f;
    b.labels.labels()[i] = set.label(first + i);
  }
  return b;
}

}  // namespace

const FashionSubset& fashion_subset(int64_t steps) {
  static const FashionSubset subset = [steps] {
    data::DataSets sets = data::open_dataset(data_test::fashion_mnist_dir());
    FashionSubset s;
    for (int64_t b = 0; b < steps; ++b) s.train.push_back(fashion_batch(*sets.train, b * 32, 32));
    for (int64_t b = 0; b < 16; ++b) s.test.push_back(fashion_batch(*sets.test, b * 250, 250));
    return s;
  }();
  return subset;
}

double accuracy_after_training(const std::string& name, Precision precision, Device device, int64_t steps,
                               int64_t test_samples, uint64_t seed) {
  const FashionSubset& data = fashion_subset(steps);
  REQUIRE(int64_t(data.train.size()) >= steps);
  REQUIRE((test_samples % 250 == 0 && test_samples / 250 <= int64_t(data.test.size())));
  ReplicaOptions options;
  options.context.precision = precision;
  ReplicaManager replicas(named_model(name, Shape{1, 28, 28}, ModelOptions{.dropout = false}, seed), {device}, options);
  const SgdConfig sgd{0.9f, 5e-4f, false};
  for (int64_t step = 0; step < steps; ++step)
    replicas.train_step(data.train[step], 0.05f * float(steps - step) / float(steps), sgd);
  StepMetrics m;
  for (int64_t b = 0; b < test_samples / 250; ++b) m += replicas.evaluate(data.test[b]);
  return 100.0 * double(m.correct) / double(m.count);
}

}  // namespace lockstep::testing
