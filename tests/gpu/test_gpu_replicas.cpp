// Replicas on the GPU: three replicas sharing GPU 0 (the local communicator's
// device path) against one replica on the same GPU, for parameters and for
// batch-norm running statistics, with the replicas bit-identical after every
// step; and the NCCL communicator with one rank per visible GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "runtime/cuda/cuda_context.h"
#include "distributed/cuda/nccl_communicator.h"
#include "runtime/device.h"
#include "distributed/replica_manager.h"
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
#include "support/replica_models.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

const Shape& sample_shape = replica_sample_shape;
const int64_t classes = replica_classes;

const SgdConfig sgd{0.9f, 1e-3f, false};

}  // namespace

// FP32 arithmetic (reference_options): one replica and three convolve batches
// of other sizes, for which cuDNN picks other algorithms; in TF32 those differ
// by TF32's rounding (3e-5 of the loss on an H200), far above FP32's.
TEST_CASE("3 replicas on one gpu train to the same parameters as one", "[gpu][replica]") {
  ReplicaOptions one_options, many_options;
  one_options.context = many_options.context = reference_options();
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

TEST_CASE("3 replicas on one gpu keep the batch-norm statistics of one", "[gpu][replica][batchnorm2d]") {
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
  ReplicaOptions options;
  options.context = reference_options();  // FP32, as the training test above
  ReplicaManager one(bn_model, {Device::cuda(0)}, options);
  ReplicaManager three(bn_model, std::vector<Device>(3, Device::cuda(0)), options);
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
