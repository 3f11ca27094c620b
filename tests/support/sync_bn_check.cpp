#include "support/sync_bn_check.h"

#include <cmath>

#include "distributed/replica_manager.h"
#include "kernels/cpu/thread_pool.h"
#include "layers/models.h"
#include "runtime/allocator.h"

namespace lockstep::testing {

namespace {

const Shape kSample{3, 8, 8};
constexpr int64_t kClasses = 10;

HostBatch batch_for_step(int64_t count, uint64_t seed) {
  HostBatch b;
  b.count = count;
  b.images = Tensor::empty_with(Shape{count, kSample[0], kSample[1], kSample[2]}, pinned_host_allocator());
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < b.images.numel(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    // Values around 0.5 with channel 0 offset, so every BN layer's mean matters.
    b.images.data()[i] = static_cast<float>((state >> 40) % 1000) / 1000.0f + (i % 3 == 0 ? 2.0f : 0.0f);
  }
  b.labels = Tensor::empty_with(Shape{count}, pinned_host_allocator(), DType::i32);
  for (int64_t i = 0; i < count; ++i) b.labels.labels()[i] = static_cast<int32_t>((seed + 7 * i) % kClasses);
  return b;
}

double normwise(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace

SyncBnDifference sync_bn_difference(const std::vector<Device>& many, Device one, bool sync, int steps, float lr,
                                    int many_threads, MemoryFormat format) {
  // resnet20 on 8x8 images with 4 to 6 samples per replica amplifies float
  // rounding: how the CPU compute pool cuts a convolution (by its thread
  // count and the replica's batch) moves the result by a few 1e-8 per step,
  // and once such a difference tips a discontinuity (a ReLU input or a
  // near-degenerate channel crossing over) it jumps to 1e-4..1e-2 within a
  // step or two. One replica on 2 threads against one on 1 thread shows it as
  // well as N replicas do (lr 0.05: 6e-5 after 3 steps; lr 0.1: 3e-5 after
  // 2), so it is no batch-norm error; the tests use a learning rate below
  // that edge and check the edge with `many_threads`. The single replica
  // always runs on one thread, so the comparison is about the batch-norm
  // math, the same on every machine.
  struct Threads {
    int saved = cpu::compute_threads();
    void set(int n) { cpu::set_compute_threads(n); }
    ~Threads() { cpu::set_compute_threads(saved); }
  } threads;
  ModelFactory factory = [](Device device) -> std::unique_ptr<Model> {
    auto g = build_model("resnet20", kSample, kClasses, ModelOptions{.dropout = false});
    g->finalize(device, 3);
    return g;
  };
  // Strict FP32 (precision fp32): in tf32, the GPU default, the libraries
  // round their operands to TF32, so a 1e-8 difference that moves an operand
  // across a TF32 rounding boundary becomes a 5e-4 one, the discontinuity
  // described above at every product.
  ReplicaOptions many_options;
  many_options.context.sync_batch_norm = sync;
  many_options.context.precision = Precision::fp32;
  many_options.context.memory_format = format;
  ReplicaOptions one_options = many_options;  // sync_batch_norm: no effect on one replica, nothing to synchronise with
  ReplicaManager single(factory, {one}, one_options);
  ReplicaManager replicas(factory, many, many_options);
  const SgdConfig sgd{0.9f, 5e-4f, false};
  for (int s = 0; s < steps; ++s) {
    HostBatch batch = batch_for_step(s % 2 ? 11 : 12, 40 + s);  // 11 over 2 or 3 replicas: an uneven split
    threads.set(1);
    single.train_step(batch, lr, sgd);
    threads.set(many_threads);
    replicas.train_step(batch, lr, sgd);
  }
  SyncBnDifference d;
  d.parameters = normwise(replicas.model(0).arenas().params.to_vector(), single.model(0).arenas().params.to_vector());
  d.statistics = normwise(replicas.model(0).state_arena().to_vector(), single.model(0).state_arena().to_vector());
  return d;
}

}  // namespace lockstep::testing
