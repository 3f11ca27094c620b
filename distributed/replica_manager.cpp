#include "distributed/replica_manager.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "distributed/batch_split.h"
#include "distributed/batch_staging.h"
#include "distributed/running_stats_combine.h"
#include "distributed/communicator_group.h"
#include "base/error.h"
#include "distributed/gradient_buckets.h"
#include "distributed/replica_graph.h"
#include "distributed/step_clock.h"
#include "ops/augment.h"

namespace lockstep {

struct ReplicaManager::Replica {
  int rank = 0;
  Device device;
  // GPU replicas: the batch slices on the device. Before ctx, so it goes
  // after ctx has waited for the copy stream that may still fill it.
  BatchStaging staging;
  std::unique_ptr<Context> ctx;
  std::unique_ptr<Model> model;
  std::vector<Bucket> buckets;
  RunningStatsCombine running_stats;
  std::unique_ptr<CommunicatorGroup> group;  // what the replica's layers see of the others
  StepMetrics metrics;
  PhaseTimes times;
  ReplicaGraph cuda_graph;  // ReplicaOptions::cuda_graphs; after ctx, so destroyed before it
  WorkerThread thread;  // last member: joined before the rest is destroyed
};

namespace {

// The slice of a host batch for one replica, on that replica's device: on a
// GPU copied asynchronously on the compute stream (from pinned memory when
// the loader's batches are pinned). The host batch must stay untouched until
// the step's loss read-back has waited for that stream, which every step does.
Tensor slice_to_device(const Tensor& host, Slice slice, Context& ctx) {
  Tensor part = host.batch_slice(slice.offset, slice.count);
  if (ctx.device().is_cpu()) return part;
  Tensor on_device = Tensor::empty(part.shape(), ctx.device(), part.dtype());
  ctx.copy(part, on_device);
  return on_device;
}

// The slice of a batch's images as the f32 images a step takes, on the
// replica's device: u8 pixels go there with their draws, mean and std, and
// are augmented there (ops::augment_images). GPU training steps stage
// theirs through BatchStaging instead, which keeps its buffers.
Tensor images_to_device(const HostBatch& batch, Slice slice, Context& ctx) {
  if (!batch.raw_pixels()) return slice_to_device(batch.images, slice, ctx);
  const Tensor pixels = slice_to_device(batch.images, slice, ctx);
  const Tensor draws = slice_to_device(batch.draws, slice, ctx);
  const Slice channels{0, batch.mean.numel()};
  const Tensor mean = slice_to_device(batch.mean, channels, ctx), stddev = slice_to_device(batch.stddev, channels, ctx);
  Tensor images = Tensor::empty(pixels.shape(), ctx.device());
  ops::augment_images(ctx, pixels, draws, batch.crop_padding, mean, stddev, images);
  return images;
}
// A replica's std::bad_alloc in words.
constexpr const char* kOutOfHostMemory =
    "out of host memory (std::bad_alloc): fewer replicas or a smaller batch need less";

// What a rehearsal's layers see of the other replicas: the real group's size
// (so synchronised batch norm takes its synchronised path and sizes its
// buffers), and sums that leave each replica's own values. The rehearsal's
// results are thrown away; it makes no collective.
class RehearsalGroup final : public ReplicaGroup {
public:
  explicit RehearsalGroup(int size) : size_(size) {}
  int size() const override { return size_; }
  void all_reduce_sum(Context&, double*, int64_t) override {}

private:
  int size_;
};

// Puts a context's replica group back however the scope ends.
class GroupSwap {
public:
  GroupSwap(Context& ctx, ReplicaGroup* group) : ctx_(ctx), saved_(ctx.replica_group()) {
    ctx.set_replica_group(group);
  }
  ~GroupSwap() { ctx_.set_replica_group(saved_); }
  GroupSwap(const GroupSwap&) = delete;
  GroupSwap& operator=(const GroupSwap&) = delete;

private:
  Context& ctx_;
  ReplicaGroup* saved_;
};
}  // namespace

ReplicaManager::ReplicaManager(const ModelFactory& factory, const std::vector<Device>& devices,
                               ReplicaOptions options)
    : options_(options) {
  LS_CHECK(!devices.empty(), "a replica manager needs at least one device");
  if (processes() > 1) {
    options_.processes->set_timeout(options_.collective_timeout);
    // The global split numbers replicas as p * size() + r: every process must
    // have as many (checked before NCCL's init, which would wait forever).
    int64_t counts[2] = {static_cast<int64_t>(devices.size()), -static_cast<int64_t>(devices.size())};
    options_.processes->max(counts, 2);
    LS_CHECK(counts[0] == -counts[1], "process ", process_rank(), " has ", devices.size(),
             " replicas, but the processes have between ", -counts[1], " and ", counts[0],
             ": every process needs the same number (--replicas, --devices)");
  }
  comm_ = make_communicator(devices, options_.collective_timeout, options_.processes);
  for (size_t r = 0; r < devices.size(); ++r) {
    std::unique_ptr<Replica> replica;
    try {
      replica = std::make_unique<Replica>();  // starts the replica's thread
    } catch (const std::system_error& e) {
      LS_FAIL("cannot start the thread of replica ", r, " of ", devices.size(), " (", e.what(),
              "): the system gives this process no more threads, or no memory for their stacks; use fewer replicas");
    }
    replica->rank = static_cast<int>(r);
    replica->device = devices[r];
    for (const auto& earlier : replicas_) replicas_share_a_device_ |= earlier->device == devices[r];
    replicas_.push_back(std::move(replica));
  }
  run_on_all([&](Replica& r) {
    r.ctx = std::make_unique<Context>(r.device, options_.context);
    r.group = std::make_unique<CommunicatorGroup>(*comm_, r.rank);
    r.ctx->set_replica_group(r.group.get());
    r.ctx->make_current();
    r.model = factory(r.device);
    LS_CHECK(r.model != nullptr, "the model factory returned no model for ", r.device.str());
    r.model->set_label_smoothing(options_.label_smoothing);
    r.buckets = make_gradient_buckets(r.model->arenas(), options_.bucket_bytes, options_.first_bucket_bytes);
  });
  broadcast_from_first();
}

// A CUDA graph needs GPU replicas, no wait inside the step (sync_timing, or
// the local communicator of replicas sharing a GPU) and one process (the
// watchdog of a cross-process run watches eager collectives).
bool ReplicaManager::graphs_in_use() const {
  return options_.cuda_graphs && replicas_[0]->device.is_cuda() && processes() == 1 && !options_.context.sync_timing &&
         !replicas_share_a_device_;
}

ReplicaManager::~ReplicaManager() {
  // Release any rank still blocked in a collective before the threads join.
  if (comm_) comm_->abort("the replica manager is being destroyed");
}

Model& ReplicaManager::model(int rank) { return *replicas_.at(rank)->model; }
Device ReplicaManager::device(int rank) const { return replicas_.at(rank)->device; }

void ReplicaManager::run_on_all(const std::function<void(Replica&)>& job) {
  LS_CHECK(!failed_, "the replica manager failed earlier and cannot run another step");
  struct Failure {
    std::string what;
    bool cancelled = false;  // a collective gave up because another rank failed
  };
  std::vector<Failure> errors(replicas_.size());
  std::vector<std::future<void>> done;
  done.reserve(replicas_.size());
  // The jobs reach this frame (job, errors): one that cannot be queued (out
  // of memory) must not leave those queued before it running after the frame
  // is gone. They are told to give up, and waited for.
  auto queueing_failed = [&] {
    comm_->abort(std::string());
    for (auto& f : done) f.wait();
    failed_ = true;
  };
  for (auto& replica : replicas_) {
    Replica* r = replica.get();
    std::future<void> queued;
    try {
      queued = r->thread.submit([this, r, &job, &errors] {
        auto fail = [&](const std::exception& e, bool cancelled) {
          // The others first, with no words if memory is out: a rank left
          // waiting in a collective would wait out the whole timeout.
          try {
            comm_->abort("replica " + std::to_string(r->rank) + " on " + r->device.str() + " failed");
          } catch (const std::bad_alloc&) {
            comm_->abort(std::string());
          }
          errors[r->rank] = {e.what(), cancelled};
        };
        try {
          // The replica's GPU must be current on its thread for kernel launches.
          if (r->ctx) r->ctx->make_current();
          job(*r);
        } catch (const Cancelled& e) {
          fail(e, true);
        } catch (const std::bad_alloc&) {
          // Host memory ran out outside the allocator (which names its own
          // failures): said in words, not as the exception's type.
          fail(std::runtime_error(kOutOfHostMemory), false);
        } catch (const std::exception& e) {
          fail(e, false);
        }
      });
    } catch (const std::bad_alloc&) {
      queueing_failed();
      LS_FAIL("replica ", r->rank, " on ", r->device.str(), ": ", kOutOfHostMemory);
    }
    done.push_back(std::move(queued));
  }
  for (size_t r = 0; r < done.size(); ++r) {
    try {
      done[r].get();
    } catch (...) {
      // Its failure could not be recorded (memory ran out while it was): not
      // a success for that.
      if (errors[r].what.empty()) errors[r] = {kOutOfHostMemory, false};
    }
  }
  // Report the replica that failed first-hand, not those it cancelled.
  int first = -1;
  for (size_t r = 0; r < errors.size(); ++r) {
    if (errors[r].what.empty()) continue;
    if (first < 0 || (!errors[r].cancelled && errors[first].cancelled)) first = static_cast<int>(r);
  }
  if (first >= 0) {
    failed_ = true;
    LS_FAIL("replica ", first, " on ", replicas_[first]->device.str(), ": ", errors[first].what);
  }
}

void ReplicaManager::plan_step(const HostBatch& batch) {
  const int64_t global = batch.count;
  const int n = global_size();
  // CPU replicas allocate from the heap, which never waits for a collective.
  const bool on_gpus = replicas_[0]->device.is_cuda();
  if (!options_.plan_new_shapes || !on_gpus || n == 1 || planned_counts_.count(global)) return;
  run_on_all([&](Replica& r) {
    Slice slice = replica_slice(global, n, global_rank(r.rank));
    r.staging.reserve(*r.ctx, batch, slice.count);  // the step's slots: no allocation in it
    Tensor images = images_to_device(batch, slice, *r.ctx);
    Tensor labels = slice_to_device(batch.labels, slice, *r.ctx);
    // Forward and backward overwrite what they write (activations, gradients,
    // batch statistics) in the real step; the running statistics, which the
    // batch-norm combination updates, are kept and put back.
    Tensor& state = r.model->state_arena();
    Tensor kept;
    if (state.defined() && state.numel() > 0) {
      kept = Tensor::empty(state.shape(), state.device());
      r.ctx->copy(state, kept);
    }
    {
      RehearsalGroup rehearsal(r.group->size());
      GroupSwap swap(*r.ctx, &rehearsal);
      const StepInfo info{options_.seed, step_, slice.offset, nullptr};
      r.model->train_step(*r.ctx, info, images, labels, 1.0f / static_cast<float>(global), nullptr);
      // Alone (no communicator): the combination's buffers, no collective.
      r.running_stats.run(*r.model, *r.ctx, nullptr, r.rank, 1.0);
    }
    if (kept.defined()) r.ctx->copy(kept, state);
  });
  // No process starts the step's collectives before every process has planned.
  if (processes() > 1) any_process(false);
  planned_counts_.insert(global);
}

void ReplicaManager::reset_phase_times() {
  // The replicas' own sums too: phase_times() is rebuilt from them after each step.
  for (auto& r : replicas_) r->times = {};
  times_ = {};
}

StepMetrics ReplicaManager::train_step(const HostBatch& batch, float lr, const SgdConfig& sgd, const HostBatch* next) {
  const int64_t global = batch.count;
  LS_CHECK(global > 0, "train_step on an empty batch");
  LS_CHECK(batch.images.dim(0) >= global && batch.labels.numel() >= global, "batch of ", global,
           " samples with images ", batch.images.shape().str(), " and ", batch.labels.numel(), " labels");
  LS_CHECK(!batch.raw_pixels() || (batch.draws.defined() && batch.draws.dim(0) >= global && batch.mean.defined() &&
                                   batch.stddev.defined()),
           "a batch of u8 pixels needs a draw per sample and the mean and std to augment them with (HostBatch)");
  // A replica without samples runs no layer, so it could not take part in
  // the synchronised statistics of each BN layer.
  LS_CHECK(!options_.context.sync_batch_norm || global >= global_size(), "synchronised batch norm needs a sample ",
           "per replica: a batch of ", global, " over ", global_size(), " replicas");
  plan_step(batch);
  // A CUDA graph needs graphs_in_use() and a sample on every replica.
  const bool graphs = graphs_in_use() && global >= global_size();
  run_on_all([&](Replica& r) { replica_step(r, batch, next, lr, sgd, graphs); });
  ++step_;
  times_ = replicas_[0]->times;
  for (auto& r : replicas_)
    if (r->times.host_syncs) times_.host_syncs = std::max(times_.host_syncs.value_or(0), *r->times.host_syncs);
  StepMetrics total;
  for (auto& r : replicas_) total += r->metrics;
  return sum_over_processes(total);
}

// One replica's share of a training step, top to bottom. The step's device
// work (queue_device_work) is queued eagerly, or captured once into the
// replica's CUDA graph and replayed from it; either way the step waits for
// the device once, at its end, to read its metrics back.
void ReplicaManager::replica_step(Replica& r, const HostBatch& batch, const HostBatch* next, float lr,
                                  const SgdConfig& sgd, bool graphs) {
  const Slice slice = replica_slice(batch.count, global_size(), global_rank(r.rank));
  StepClock clock(*r.ctx);
  const auto [images, labels] = stage_slice(r, batch, next, slice);
  TrainStepResult result;
  // Every step tells the graph its size: one at another size drops it.
  if (r.cuda_graph.follows(batch.count) && graphs) {
    ReplicaGraph& g = r.cuda_graph;
    g.stage(*r.ctx, images, labels, lr, step_);  // to the buffers the graph reads
    clock.mark_launch();
    if (!g.captured()) {
      const StepInfo info{options_.seed, step_, slice.offset, g.step_on_device()};
      StepCapture capture(*r.ctx);
      TrainStepResult captured = queue_device_work(r, info, batch.count, slice, g.images(), g.labels(), lr,
                                                   g.lr_on_device(), sgd, clock);
      g.keep(capture.finish(), std::move(captured));
      ++r.times.graph_captures;
    }
    g.launch(*r.ctx);
    ++r.times.graph_steps;
    result = g.result();
  } else {
    const StepInfo info{options_.seed, step_, slice.offset, nullptr};
    result = queue_device_work(r, info, batch.count, slice, images, labels, lr, nullptr, sgd, clock);
  }
  clock.queued(r.times);
  r.metrics = result.metrics();  // the step's one read-back
  if (!result.read_back) r.ctx->synchronize();  // an empty slice queued no loss pass to wait for
  clock.add_phases(r.times, result);
}

// The replica's slice on its device. A GPU's was usually copied during the
// step before (BatchStaging), and the next batch's slice is queued now, on
// the copy stream, to overlap this step's compute; neither allocates.
std::pair<Tensor, Tensor> ReplicaManager::stage_slice(Replica& r, const HostBatch& batch, const HostBatch* next,
                                                      const Slice& slice) {
  if (!r.device.is_cuda()) return {images_to_device(batch, slice, *r.ctx), slice_to_device(batch.labels, slice, *r.ctx)};
  BatchStaging::Slices staged = r.staging.take(*r.ctx, batch, slice);
  if (staged.ahead) ++r.times.batches_ahead;
  if (next && next->count > 0)
    r.staging.copy_ahead(*r.ctx, *next, replica_slice(next->count, global_size(), global_rank(r.rank)));
  return {staged.images, staged.labels};
}

// Forward and backward with each gradient bucket summed across replicas as
// soon as backward has finished it, the running statistics combined, the
// collectives waited for, the update: all queued, nothing waited for.
// `lr_on_device`, where given, is read by the update when it runs (a graph).
TrainStepResult ReplicaManager::queue_device_work(Replica& r, const StepInfo& info, int64_t global, const Slice& slice,
                                                  const Tensor& images, const Tensor& labels, float lr,
                                                  const float* lr_on_device, const SgdConfig& sgd, StepClock& clock) {
  ParameterArenas& arenas = r.model->arenas();
  const bool alone = global_size() == 1;
  size_t next_bucket = 0;
  GradReadyCallback on_ready;
  if (!alone)
    on_ready = [&](int64_t first_ready) {
      for (; next_bucket < r.buckets.size() && r.buckets[next_bucket].begin >= first_ready; ++next_bucket) {
        const Bucket& b = r.buckets[next_bucket];
        comm_->all_reduce_sum(r.rank, *r.ctx, arenas.grads.data() + b.begin, b.end - b.begin);
      }
    };
  TrainStepResult result = r.model->train_step(*r.ctx, info, images, labels, 1.0f / static_cast<float>(global), on_ready);
  clock.mark_compute_end(result);
  const double weight = static_cast<double>(slice.count) / static_cast<double>(global);
  r.running_stats.run(*r.model, *r.ctx, comm_.get(), r.rank, weight);
  if (sgd.ema_decay > 0.0) r.running_stats.average(*r.model, *r.ctx, sgd.ema_decay, info.step, info.step_on_device);
  if (!alone) comm_->wait(r.rank, *r.ctx);
  if (options_.context.sync_timing) r.ctx->synchronize();
  clock.mark_update();
  ops::optimizer_step(*r.ctx, arenas, sgd, lr, info.step, lr_on_device, info.step_on_device);
  return result;
}

StepMetrics ReplicaManager::sum_over_processes(const StepMetrics& local) {
  if (processes() == 1) return local;
  // Doubles hold the counts exactly up to 2^53 samples.
  double sums[3] = {local.loss_sum, static_cast<double>(local.correct), static_cast<double>(local.count)};
  options_.processes->sum(sums, 3);
  StepMetrics total;
  total.loss_sum = sums[0];
  total.correct = static_cast<int64_t>(sums[1]);
  total.count = static_cast<int64_t>(sums[2]);
  return total;
}

bool ReplicaManager::any_process(bool flag) { return processes() == 1 ? flag : options_.processes->any(flag); }

StepMetrics ReplicaManager::evaluate(const HostBatch& batch) {
  const int64_t global = batch.count;
  const int n = global_size();
  run_on_all([&](Replica& r) {
    Slice slice = replica_slice(global, n, global_rank(r.rank));
    r.cuda_graph.drop();  // evaluation may allocate what outlives it (ReplicaGraph)
    r.metrics = {};
    if (slice.count == 0) return;
    Tensor images = images_to_device(batch, slice, *r.ctx);
    Tensor labels = slice_to_device(batch.labels, slice, *r.ctx);
    r.metrics = r.model->evaluate(*r.ctx, images, labels);
  });
  StepMetrics total;
  for (auto& r : replicas_) total += r->metrics;
  return sum_over_processes(total);
}

std::vector<float> ReplicaManager::logits(const HostBatch& batch) {
  const int64_t global = batch.count;
  const int64_t classes = replicas_[0]->model->num_classes();
  std::vector<float> out(global * classes);
  run_on_all([&](Replica& r) {
    Slice slice = replica_slice(global, global_size(), global_rank(r.rank));
    r.cuda_graph.drop();  // as in evaluate
    if (slice.count == 0) return;
    Tensor images = images_to_device(batch, slice, *r.ctx);
    std::vector<float> part = r.model->logits(*r.ctx, images).to_vector();
    std::copy(part.begin(), part.end(), out.begin() + slice.offset * classes);
  });
  // Each row was written by one replica of one process and is zero elsewhere,
  // so the sum over processes gathers the rows exactly.
  if (processes() > 1) options_.processes->sum(out.data(), static_cast<int64_t>(out.size()));
  return out;
}

void ReplicaManager::prepare_optimizer(const SgdConfig& sgd) {
  run_on_all([&](Replica& r) {
    if (sgd.optimizer == Optimizer::adamw) r.model->arenas().add_adamw_state();
    if (sgd.ema_decay > 0.0) r.model->arenas().add_ema(r.model->state_arena());
  });
}

void ReplicaManager::restart_ema() {
  run_on_all([](Replica& r) { r.model->arenas().restart_ema(r.model->state_arena()); });
}

void ReplicaManager::swap_ema() {
  run_on_all([](Replica& r) {
    ParameterArenas& a = r.model->arenas();
    LS_CHECK(a.ema.defined(), "swap_ema: the replicas keep no moving average");
    r.cuda_graph.drop();  // other work on the replica (ReplicaGraph)
    Tensor& state = r.model->state_arena();
    for (auto [live, average] : {std::pair<Tensor*, Tensor*>{&a.params, &a.ema}, {&state, &a.ema_state}}) {
      if (!live->defined()) continue;
      Tensor kept = Tensor::empty(live->shape(), live->device());
      r.ctx->copy(*live, kept);
      r.ctx->copy(*average, *live);
      r.ctx->copy(kept, *average);
      r.ctx->synchronize();  // `kept` goes at the end of the scope
    }
    a.params_bf16_stale = true;  // precision bf16: the copy is made again from what params now hold
  });
}

void ReplicaManager::broadcast_from_first() {
  Model& first = *replicas_[0]->model;
  // Precision bf16: every replica makes its copy of the weights again from what it now holds.
  for (auto& r : replicas_) r->model->arenas().params_bf16_stale = true;
  if (processes() > 1) {
    // The first process's replica 0 to every other process's replica 0.
    for (Tensor* t : {&first.arenas().params, &first.arenas().momentum, &first.arenas().exp_avg_sq,
                      &first.state_arena(), &first.arenas().ema, &first.arenas().ema_state}) {
      // A model without batch norm has no statistics, SGD no second moment, a run without --ema no average.
      if (!t->defined() || t->numel() == 0) continue;
      std::vector<float> values = t->to_vector();
      options_.processes->broadcast(values.data(), static_cast<int64_t>(values.size() * sizeof(float)), 0);
      t->copy_from(Tensor::from_vector(t->shape(), values, t->device()));
    }
  }
  if (size() == 1) return;
  run_on_all([&](Replica& r) {
    if (r.rank == 0) return;
    ParameterArenas& a = r.model->arenas();
    a.params.copy_from(first.arenas().params);
    a.momentum.copy_from(first.arenas().momentum);
    if (a.exp_avg_sq.defined()) a.exp_avg_sq.copy_from(first.arenas().exp_avg_sq);
    r.model->state_arena().copy_from(first.state_arena());
    if (a.ema.defined()) {
      a.ema.copy_from(first.arenas().ema);
      a.ema_state.copy_from(first.arenas().ema_state);
    }
  });
}

bool ReplicaManager::replicas_identical() {
  auto bytes_of = [](const Tensor& t) { return t.to_vector(); };
  Model& first = *replicas_[0]->model;
  // AdamW's second moment (none under SGD), the moving averages (none without --ema).
  auto optional = [&](const Tensor& t) { return t.defined() ? bytes_of(t) : std::vector<float>{}; };
  auto p0 = bytes_of(first.arenas().params), v0 = bytes_of(first.arenas().momentum),
       s0 = bytes_of(first.state_arena()), a0 = optional(first.arenas().exp_avg_sq),
       e0 = optional(first.arenas().ema), es0 = optional(first.arenas().ema_state);
  for (int r = 1; r < size(); ++r) {
    Model& m = *replicas_[r]->model;
    auto p = bytes_of(m.arenas().params), v = bytes_of(m.arenas().momentum), s = bytes_of(m.state_arena()),
         a = optional(m.arenas().exp_avg_sq), e = optional(m.arenas().ema), es = optional(m.arenas().ema_state);
    // An empty buffer's data() may be null, which memcmp must not be given.
    const auto differ = [](const std::vector<float>& x, const std::vector<float>& y) {
      return x.size() != y.size() || (!x.empty() && std::memcmp(x.data(), y.data(), x.size() * 4) != 0);
    };
    if (differ(p, p0) || differ(v, v0) || differ(s, s0) || differ(a, a0) || differ(e, e0) || differ(es, es0))
      return false;
  }
  return true;
}

}  // namespace lockstep
