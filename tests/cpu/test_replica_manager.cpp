// N replicas on the CPU (local communicator) against one replica on the same
// global batches: parameters, batch-norm statistics, evaluation, failures.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <new>
#include <thread>

#include "distributed/batch_split.h"
#include "base/error.h"
#include "distributed/local_communicator.h"
#include "distributed/replica_manager.h"
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

void require_close(const std::vector<float>& got, const std::vector<float>& want, double rtol, double atol,
                   const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what << " element " << i << ": " << got[i] << " vs " << want[i]);
    REQUIRE(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]));
  }
}

const SgdConfig sgd{0.9f, 1e-3f, false};

}  // namespace

TEST_CASE("replica_slice gives the remainder to the first replicas", "[replica]") {
  REQUIRE(replica_slice(10, 4, 0).count == 3);
  REQUIRE(replica_slice(10, 4, 1).count == 3);
  REQUIRE(replica_slice(10, 4, 2).count == 2);
  REQUIRE(replica_slice(10, 4, 3).offset == 8);
  REQUIRE(replica_slice(3, 4, 3).count == 0);
  REQUIRE(replica_slice(3, 4, 3).offset == 3);
}

TEST_CASE("N replicas train to the same parameters as one replica", "[replica]") {
  int replicas = GENERATE(1, 2, 3, 4);
  std::vector<int64_t> batch_sizes = {10, 3, 7, 10, 5};  // 10 over 4 is 3,3,2,2; 3 over 4 leaves one empty
  ReplicaManager one(plain_model, {Device::cpu()});
  ReplicaManager many(plain_model, std::vector<Device>(replicas, Device::cpu()), {.bucket_bytes = 256});
  for (size_t s = 0; s < batch_sizes.size(); ++s) {
    HostBatch batch = make_batch(batch_sizes[s], 100 + s);
    StepMetrics a = one.train_step(batch, 0.05f, sgd);
    StepMetrics b = many.train_step(batch, 0.05f, sgd);
    REQUIRE(b.count == a.count);
    REQUIRE(b.correct == a.correct);
    REQUIRE(b.loss_sum == Approx(a.loss_sum).epsilon(1e-5));
    REQUIRE(many.replicas_identical());
  }
  INFO(replicas << " replicas");
  require_close(many.model(0).arenas().params.to_vector(), one.model(0).arenas().params.to_vector(), 1e-5, 1e-7,
                "parameter");
}

// AdamW divides by the root of the squared gradient, so a gradient summed
// in another order moves its step by about as much relative error as SGD's.
TEST_CASE("N replicas train with adamw to the same parameters and state as one replica", "[replica][adamw]") {
  int replicas = GENERATE(2, 3);
  std::vector<int64_t> batch_sizes = {10, 3, 7, 10, 5};
  SgdConfig adamw{0.9f, 0.05f, false};
  adamw.optimizer = Optimizer::adamw;
  ReplicaManager one(plain_model, {Device::cpu()});
  ReplicaManager many(plain_model, std::vector<Device>(replicas, Device::cpu()), {.bucket_bytes = 256});
  one.prepare_optimizer(adamw);
  many.prepare_optimizer(adamw);
  for (size_t s = 0; s < batch_sizes.size(); ++s) {
    HostBatch batch = make_batch(batch_sizes[s], 100 + s);
    const float lr = 1e-3f * static_cast<float>(s + 1);
    StepMetrics a = one.train_step(batch, lr, adamw);
    StepMetrics b = many.train_step(batch, lr, adamw);
    REQUIRE(b.loss_sum == Approx(a.loss_sum).epsilon(1e-5));
    REQUIRE(many.replicas_identical());
  }
  INFO(replicas << " replicas");
  const ParameterArenas &m = many.model(0).arenas(), &o = one.model(0).arenas();
  require_close(m.params.to_vector(), o.params.to_vector(), 1e-5, 1e-7, "parameter");
  require_close(m.momentum.to_vector(), o.momentum.to_vector(), 1e-4, 1e-7, "exp_avg");
  require_close(m.exp_avg_sq.to_vector(), o.exp_avg_sq.to_vector(), 1e-4, 1e-9, "exp_avg_sq");
}

// The moving averages of the weights (in the optimizer's pass) and of the
// statistics (after their combination) follow what N replicas keep as one.
TEST_CASE("N replicas keep the same moving average as one replica", "[replica][ema]") {
  const int replicas = GENERATE(2, 3);
  INFO(replicas << " replicas");
  SgdConfig averaged = sgd;
  averaged.ema_decay = 0.7;
  const std::vector<int64_t> batch_sizes = {10, 3, 7, 10, 5, 6};
  {
    ReplicaManager one(plain_model, {Device::cpu()});
    ReplicaManager many(plain_model, std::vector<Device>(replicas, Device::cpu()), {.bucket_bytes = 256});
    one.prepare_optimizer(averaged);
    many.prepare_optimizer(averaged);
    for (size_t s = 0; s < batch_sizes.size(); ++s) {
      HostBatch batch = make_batch(batch_sizes[s], 100 + s);
      one.train_step(batch, 0.05f, averaged);
      many.train_step(batch, 0.05f, averaged);
      REQUIRE(many.replicas_identical());
    }
    const ParameterArenas &m = many.model(0).arenas(), &o = one.model(0).arenas();
    REQUIRE(o.ema.to_vector() != o.params.to_vector());  // an average, not the weights
    require_close(m.ema.to_vector(), o.ema.to_vector(), 1e-5, 1e-7, "weights' average");
  }
  // Learning rate 0 keeps a BN model's weights equal (as below), so the statistics follow the same batches.
  ReplicaManager one(bn_model, {Device::cpu()});
  ReplicaManager many(bn_model, std::vector<Device>(replicas, Device::cpu()));
  one.prepare_optimizer(averaged);
  many.prepare_optimizer(averaged);
  for (size_t s = 0; s < batch_sizes.size(); ++s) {
    HostBatch batch = make_batch(batch_sizes[s], 300 + s, 1000.0f);
    one.train_step(batch, 0.0f, averaged);
    many.train_step(batch, 0.0f, averaged);
    REQUIRE(many.replicas_identical());
  }
  const std::vector<float> average = one.model(0).arenas().ema_state.to_vector();
  REQUIRE(average != one.model(0).state_arena().to_vector());
  require_close(many.model(0).arenas().ema_state.to_vector(), average, 1e-5, 1e-6, "statistics' average");
}

TEST_CASE("N replicas keep the same batch-norm running statistics as one replica", "[replica][batchnorm2d]") {
  int replicas = GENERATE(2, 3, 4);
  ReplicaManager one(bn_model, {Device::cpu()});
  ReplicaManager many(bn_model, std::vector<Device>(replicas, Device::cpu()));
  INFO(replicas << " replicas");
  // Learning rate 0 keeps the parameters equal (the gradients of a BN model
  // differ with the split: each replica normalises by its own batch), so the
  // running statistics keep following the same batches. Channel 0 has mean
  // 1000 and standard deviation ~0.6.
  std::vector<int64_t> batch_sizes = {10, 3, 7, 10, 5, 6};
  for (size_t s = 0; s < batch_sizes.size(); ++s) {
    HostBatch batch = make_batch(batch_sizes[s], 300 + s, 1000.0f);
    one.train_step(batch, 0.0f, sgd);
    many.train_step(batch, 0.0f, sgd);
    REQUIRE(many.replicas_identical());
    require_close(many.model(0).state_arena().to_vector(), one.model(0).state_arena().to_vector(), 1e-5, 1e-6,
                  "running statistic");
  }
  // Training for real, the replicas still hold bit-identical parameters and statistics.
  for (int s = 0; s < 3; ++s) {
    many.train_step(make_batch(7, 500 + s, 1000.0f), 0.05f, sgd);
    REQUIRE(many.replicas_identical());
  }
  // The statistics did follow the data: bn0's running mean of channel 0 moved towards 1000.
  BatchNormState* bn0 = many.model(0).batch_norms()[0];
  REQUIRE(bn0->running_mean.to_vector()[0] > 400.0f);
}

TEST_CASE("evaluation on 3 replicas counts every sample once", "[replica]") {
  ReplicaManager one(bn_model, {Device::cpu()});
  ReplicaManager three(bn_model, std::vector<Device>(3, Device::cpu()));
  StepMetrics a, b;
  for (int64_t size : {8, 8, 8, 5}) {  // 29 samples: not a multiple of the batch
    HostBatch batch = make_batch(size, 900 + size);
    a += one.evaluate(batch);
    b += three.evaluate(batch);
  }
  REQUIRE(a.count == 29);
  REQUIRE(b.count == 29);
  REQUIRE(b.correct == a.correct);
  REQUIRE(b.loss_sum == Approx(a.loss_sum).epsilon(1e-6));
}

namespace {
// Throws in forward on the replica whose slice starts at sample `offset`:
// an Error, or std::bad_alloc as host memory running out would.
class FailingLayer final : public Layer {
public:
  explicit FailingLayer(int64_t offset, bool out_of_memory = false) : offset_(offset), out_of_memory_(out_of_memory) {}
  std::string type() const override { return "failing"; }
  Shape output_shape(const std::vector<Shape>& in) const override { return in[0]; }
  void forward(Context&, const std::vector<Tensor>& in, Tensor& out, Mode, const StepInfo& step) override {
    if (step.sample_offset == offset_ && out_of_memory_) throw std::bad_alloc();
    if (step.sample_offset == offset_) LS_FAIL("injected failure");
    out.copy_from(in[0]);
  }
  void backward(Context&, const std::vector<Tensor>&, const Tensor&, const Tensor& dy, std::vector<Tensor>& dx,
                const std::vector<GradMode>&) override {
    if (dx[0].defined()) dx[0].copy_from(dy);
  }

private:
  int64_t offset_;
  bool out_of_memory_;
};
}  // namespace

TEST_CASE("a replica that throws mid-step fails the step without hanging", "[replica][failure]") {
  auto factory = [](Device device) -> std::unique_ptr<Model> {
    auto g = std::make_unique<Graph>(sample_shape, classes, "test-failing");
    g->then("conv1", std::make_unique<Conv2d>(3, 3, 1, 1));
    g->then("fail", std::make_unique<FailingLayer>(3));  // replica 1 of 3 over 9 samples
    g->then("flat", std::make_unique<Flatten>());
    g->then("fc", std::make_unique<Linear>(classes));
    g->finalize(device, 5);
    return g;
  };
  auto start = std::chrono::steady_clock::now();
  {
    ReplicaManager manager(factory, std::vector<Device>(3, Device::cpu()),
                           {.collective_timeout = std::chrono::milliseconds(20000)});
    HostBatch batch = make_batch(9, 1);
    REQUIRE_THROWS_WITH(manager.train_step(batch, 0.1f, sgd),
                        Catch::Contains("replica 1 on cpu") && Catch::Contains("injected failure"));
    REQUIRE_THROWS_WITH(manager.train_step(batch, 0.1f, sgd), Catch::Contains("failed earlier"));
  }  // destroyed cleanly: every thread joined
  // Released by the abort, not by the 20 s watchdog.
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("a replica out of host memory fails the step saying so, not naming std::bad_alloc alone",
          "[replica][failure]") {
  auto factory = [](Device device) -> std::unique_ptr<Model> {
    auto g = std::make_unique<Graph>(sample_shape, classes, "test-out-of-memory");
    g->then("conv1", std::make_unique<Conv2d>(3, 3, 1, 1));
    g->then("fail", std::make_unique<FailingLayer>(0, true));  // replica 0 of 2 over 6 samples
    g->then("flat", std::make_unique<Flatten>());
    g->then("fc", std::make_unique<Linear>(classes));
    g->finalize(device, 5);
    return g;
  };
  ReplicaManager manager(factory, std::vector<Device>(2, Device::cpu()),
                         {.collective_timeout = std::chrono::milliseconds(20000)});
  HostBatch batch = make_batch(6, 1);
  REQUIRE_THROWS_WITH(manager.train_step(batch, 0.1f, sgd),
                      Catch::Contains("replica 0 on cpu: out of host memory (std::bad_alloc)") &&
                          Catch::Contains("fewer replicas or a smaller batch"));
}

TEST_CASE("the watchdog turns a hung collective into an error", "[replica][failure]") {
  LocalCommunicator comm(2, std::chrono::milliseconds(200));
  Context ctx(Device::cpu());
  std::vector<float> data(4, 1.0f);
  // Rank 1 never arrives.
  REQUIRE_THROWS_WITH(comm.all_reduce_sum(0, ctx, data.data(), 4),
                      Catch::Contains("hung") && Catch::Contains("rank(s) 1"));
}

TEST_CASE("the local communicator sums in rank order on every rank", "[replica]") {
  const int ranks = 3;
  LocalCommunicator comm(ranks);
  std::vector<std::vector<float>> data(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    data[r] = {float(r + 1), float(10 * (r + 1)), 0.5f, -1.0f, float(r)};
    threads.emplace_back([&, r] {
      Context ctx(Device::cpu());
      comm.all_reduce_sum(r, ctx, data[r].data(), 5);
      comm.all_reduce_sum(r, ctx, data[r].data(), 2);  // a second, shorter collective
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    REQUIRE(data[r] == std::vector<float>{18.0f, 180.0f, 1.5f, -3.0f, 3.0f});
  }
}

TEST_CASE("the local communicator rounds a float sum once, so it does not depend on the grouping", "[replica]") {
  // 1 + 2^-24 is a tie that rounds to 1 in float, so summed in float in
  // rank order the two 2^-24 would vanish, while 2^-24 + 2^-24 first (as a
  // process holding the last two replicas would give) keeps them: 1 + 2^-23.
  // Summed in double and rounded once, every grouping gives 1 + 2^-23.
  const int ranks = 3;
  const float tiny = std::ldexp(1.0f, -24);
  for (int first_rank_of_one = 0; first_rank_of_one < ranks; ++first_rank_of_one) {
    LocalCommunicator comm(ranks);
    std::vector<std::vector<float>> data(ranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      data[r] = {r == first_rank_of_one ? 1.0f : tiny};
      threads.emplace_back([&, r] {
        Context ctx(Device::cpu());
        comm.all_reduce_sum(r, ctx, data[r].data(), 1);
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < ranks; ++r) REQUIRE(data[r][0] == 1.0f + 2 * tiny);
  }
}

TEST_CASE("the local communicator sums doubles exactly beyond float precision", "[replica]") {
  const int ranks = 3;
  LocalCommunicator comm(ranks);
  // 2^24 + 1 is not a float; 1e-12 vanishes next to 1 in a float.
  const double big = 16777217.0;
  std::vector<std::vector<double>> data(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    data[r] = {big * (r + 1), 1.0 + 1e-12 * (r + 1), -0.25};
    threads.emplace_back([&, r] {
      Context ctx(Device::cpu());
      comm.all_reduce_sum(r, ctx, data[r].data(), 3);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    REQUIRE(data[r][0] == big * 6.0);
    REQUIRE(data[r][1] == (1.0 + 1e-12) + (1.0 + 2e-12) + (1.0 + 3e-12));
    REQUIRE(data[r][2] == -0.75);
  }
}

TEST_CASE("the local communicator refuses a float and a double collective side by side", "[replica][failure]") {
  LocalCommunicator comm(2, std::chrono::milliseconds(20000));
  std::vector<float> floats(4, 1.0f);
  std::vector<double> doubles(4, 1.0);
  std::string errors[2];
  std::thread other([&] {
    Context ctx(Device::cpu());
    try {
      comm.all_reduce_sum(1, ctx, doubles.data(), 4);
    } catch (const std::exception& e) {
      errors[1] = e.what();
    }
  });
  Context ctx(Device::cpu());
  try {
    comm.all_reduce_sum(0, ctx, floats.data(), 4);
  } catch (const std::exception& e) {
    errors[0] = e.what();
  }
  other.join();
  for (const std::string& e : errors) REQUIRE_THAT(e, Catch::Contains("4 bytes") && Catch::Contains("8 bytes"));
}
