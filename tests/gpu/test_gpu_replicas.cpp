// Replicas on the GPU: three replicas sharing GPU 0 (the local communicator's
// device path) against one replica on the same GPU, for parameters and for
// batch-norm running statistics, with the replicas bit-identical after every
// step; and the NCCL communicator with one rank per visible GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "engine/cuda/cuda_context.h"
#include "engine/cuda/nccl_communicator.h"
#include "engine/device.h"
#include "engine/replica_manager.h"
#include "gpu_compare.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/graph.h"
#include "layers/linear.h"
#include "layers/pool.h"
#include "layers/relu.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;
using lockstep::testing::require_close;

namespace {

const Shape sample_shape{3, 5, 5};
const int64_t classes = 4;

// The models of tests/cpu/test_replica_manager.cpp: no BN, and two BN layers
// that read the input or a convolution of it.
std::unique_ptr<Model> plain_model(Device device) {
  auto g = std::make_unique<Graph>(sample_shape, classes, "test-plain");
  g->then("conv1", std::make_unique<Conv2d>(3, 3, 1, 1));
  g->then("relu1", std::make_unique<ReLU>());
  g->then("conv2", std::make_unique<Conv2d>(3, 3, 1, 1));
  g->add("skip", std::make_unique<Add>(), {"conv2", "input"});
  g->then("flat", std::make_unique<Flatten>());
  g->then("fc", std::make_unique<Linear>(classes));
  g->finalize(device, 11);
  return g;
}

std::unique_ptr<Model> bn_model(Device device) {
  auto g = std::make_unique<Graph>(sample_shape, classes, "test-bn");
  g->add("bn0", std::make_unique<BatchNorm2d>(), {"input"});
  g->add("conv1", std::make_unique<Conv2d>(3, 3, 1, 1, false), {"input"});
  g->then("bn1", std::make_unique<BatchNorm2d>());
  g->add("sum", std::make_unique<Add>(), {"bn0", "bn1"});
  g->then("relu1", std::make_unique<ReLU>());
  g->then("pool", std::make_unique<GlobalAvgPool>());
  g->then("flat", std::make_unique<Flatten>());
  g->then("fc", std::make_unique<Linear>(classes));
  g->finalize(device, 12);
  return g;
}

HostBatch make_batch(int64_t count, uint64_t seed, float channel0_mean = 0.0f) {
  HostBatch b;
  b.count = count;
  std::vector<float> x = random_values(count * sample_shape.numel(), seed);
  for (int64_t n = 0; n < count; ++n)
    for (int64_t i = 0; i < 25; ++i) x[n * 75 + i] += channel0_mean;
  // Pinned, as the loader's batches are, so the slices go up asynchronously.
  b.images = Tensor::empty_with(Shape{count, 3, 5, 5}, pinned_host_allocator());
  std::copy(x.begin(), x.end(), b.images.data());
  b.labels = Tensor::empty_with(Shape{count}, pinned_host_allocator(), DType::i32);
  for (int64_t i = 0; i < count; ++i) b.labels.labels()[i] = static_cast<int32_t>((seed + i * 7) % classes);
  return b;
}

const SgdConfig sgd{0.9f, 1e-3f, false};

}  // namespace

TEST_CASE("3 replicas on one gpu train to the same parameters as one", "[gpu][replica]") {
  ReplicaOptions one_options, many_options;
  many_options.bucket_bytes = 256;  // several buckets: several collectives per step
  ReplicaManager one(plain_model, {Device::cuda(0)}, one_options);
  ReplicaManager many(plain_model, std::vector<Device>(3, Device::cuda(0)), many_options);
  std::vector<int64_t> batch_sizes = {10, 3, 7, 10, 5};  // 10 over 3 is 4,3,3; 3 over 3 is 1,1,1
  for (size_t s = 0; s < batch_sizes.size(); ++s) {
    HostBatch batch = make_batch(batch_sizes[s], 100 + s);
    StepMetrics a = one.train_step(batch, 0.05f, sgd);
    StepMetrics b = many.train_step(batch, 0.05f, sgd);
    REQUIRE(b.count == a.count);
    REQUIRE(b.correct == a.correct);
    REQUIRE(b.loss_sum == Approx(a.loss_sum).epsilon(1e-5));
    REQUIRE(many.replicas_identical());
  }
  require_close(many.model(0).arenas().params.to_vector(), one.model(0).arenas().params.to_vector(), 1e-5, 1e-6);
}

TEST_CASE("3 replicas on one gpu keep the batch-norm statistics of one", "[gpu][replica][batchnorm]") {
  ReplicaManager one(bn_model, {Device::cuda(0)});
  ReplicaManager many(bn_model, std::vector<Device>(3, Device::cuda(0)));
  // lr 0 keeps the parameters equal, so both see the same activations (see
  // the CPU test); channel 0 has mean 1000 and standard deviation ~0.6.
  std::vector<int64_t> batch_sizes = {10, 3, 7, 10, 5, 2};  // 2 over 3 leaves one replica empty
  for (size_t s = 0; s < batch_sizes.size(); ++s) {
    HostBatch batch = make_batch(batch_sizes[s], 300 + s, 1000.0f);
    one.train_step(batch, 0.0f, sgd);
    many.train_step(batch, 0.0f, sgd);
    REQUIRE(many.replicas_identical());
    require_close(many.model(0).state_arena().to_vector(), one.model(0).state_arena().to_vector(), 1e-5, 1e-6);
  }
  for (int s = 0; s < 3; ++s) {
    many.train_step(make_batch(7, 500 + s, 1000.0f), 0.05f, sgd);
    REQUIRE(many.replicas_identical());
  }
  REQUIRE(many.model(0).batch_norms()[0]->running_mean.to_vector()[0] > 400.0f);
}

TEST_CASE("evaluation on 3 gpu replicas counts every sample once", "[gpu][replica]") {
  ReplicaManager one(bn_model, {Device::cuda(0)});
  ReplicaManager three(bn_model, std::vector<Device>(3, Device::cuda(0)));
  StepMetrics a, b;
  for (int64_t size : {8, 5, 2}) {
    HostBatch batch = make_batch(size, 900 + size);
    a += one.evaluate(batch);
    b += three.evaluate(batch);
    require_close(three.logits(batch), one.logits(batch), 1e-5, 1e-6);
  }
  REQUIRE(b.count == 15);
  REQUIRE(b.count == a.count);
  REQUIRE(b.correct == a.correct);
  REQUIRE(b.loss_sum == Approx(a.loss_sum).epsilon(1e-5));
}

TEST_CASE("nccl sums over one rank per visible gpu", "[gpu][nccl]") {
  const int gpus = cuda_device_count();
  std::vector<Device> devices;
  for (int d = 0; d < gpus; ++d) devices.push_back(Device::cuda(d));
  NcclCommunicator comm(devices, std::chrono::milliseconds(60000));
  REQUIRE(comm.size() == gpus);
  const int64_t count = 1000;
  std::vector<std::vector<float>> results(gpus);
  std::vector<std::string> errors(gpus);
  std::vector<std::thread> threads;
  for (int r = 0; r < gpus; ++r)
    threads.emplace_back([&, r] {
      try {
        Context ctx(devices[r]);
        ctx.make_current();
        std::vector<float> values(count);
        for (int64_t i = 0; i < count; ++i) values[i] = static_cast<float>((r + 1) * i);
        Tensor buffer = Tensor::from_vector(Shape{count}, values, devices[r]);
        for (int round = 0; round < 2; ++round) comm.all_reduce_sum(r, ctx, buffer.data(), count);
        comm.wait(r, ctx);
        ctx.synchronize();
        results[r] = buffer.to_vector();
      } catch (const std::exception& e) {
        errors[r] = e.what();
        comm.abort("rank " + std::to_string(r) + " failed");
      }
    });
  for (auto& t : threads) t.join();
  // Two rounds: the sum of all ranks, then that times the rank count.
  const double rank_sum = gpus * (gpus + 1) / 2.0;
  for (int r = 0; r < gpus; ++r) {
    INFO("rank " << r << ": " << errors[r]);
    REQUIRE(errors[r].empty());
    for (int64_t i = 0; i < count; ++i) REQUIRE(results[r][i] == static_cast<float>(rank_sum * gpus * i));
  }
}

TEST_CASE("replicas on every visible gpu train as one", "[gpu][nccl][replica]") {
  // One replica per GPU: NCCL when there are several, no collective with one.
  const int gpus = cuda_device_count();
  std::vector<Device> devices;
  for (int d = 0; d < gpus; ++d) devices.push_back(Device::cuda(d));
  ReplicaManager one(plain_model, {Device::cuda(0)});
  ReplicaManager all(plain_model, devices, {.bucket_bytes = 256});
  for (int64_t size : {9, 4, 1}) {
    HostBatch batch = make_batch(size, 700 + size);
    StepMetrics a = one.train_step(batch, 0.05f, sgd);
    StepMetrics b = all.train_step(batch, 0.05f, sgd);
    REQUIRE(b.loss_sum == Approx(a.loss_sum).epsilon(1e-5));
    REQUIRE(all.replicas_identical());
  }
  require_close(all.model(0).arenas().params.to_vector(), one.model(0).arenas().params.to_vector(), 1e-5, 1e-6);
}
