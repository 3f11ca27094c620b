#pragma once
// ReplicaManager: one Replica per participating device (several may share a
// device, e.g. the CPU or one GPU), each with its own context, its own copy of
// the model and one long-lived thread. A step splits the global batch,
// runs forward/backward on every replica with the gradient all-reduce launched
// bucket by bucket as backward finishes them, combines the batch-norm
// statistics exactly, and applies the fused SGD-momentum update on every
// replica, so the replicas stay bit-identical without a broadcast.
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "runtime/batch_source.h"
#include "distributed/communicator.h"
#include "distributed/phase_times.h"
#include "runtime/model.h"
#include "ops/sgd.h"
#include "runtime/worker_thread.h"

namespace lockstep {

struct Slice;
class StepClock;

struct ReplicaOptions {
  size_t bucket_bytes = size_t(25) << 20;  // gradient all-reduce bucket size
  // The first bucket (the last layers' gradients, done first in backward)
  // closes at this size when smaller than bucket_bytes, so that
  // communication starts early in backward (as PyTorch DDP's 1 MiB first bucket).
  size_t first_bucket_bytes = size_t(1) << 20;
  std::chrono::milliseconds collective_timeout = default_collective_timeout;
  ContextOptions context;
  uint64_t seed = 0;  // dropout and the like; parameters come from the factory
  float label_smoothing = 0.0f;  // of the training loss (ops/loss.h); evaluation reports the plain loss
  // The other processes of a multi-process run (MPI), each with as many
  // replicas as this one; null: this process alone. The global batch is then
  // split over every replica of every process (process p's replica r is
  // global replica p * size() + r), and metrics, logits and the first
  // process's parameters cross processes.
  std::shared_ptr<ProcessGroup> processes;
  // Before the first step at a batch size it has not seen (the first step, a
  // partial last batch), every replica rehearses the step without
  // collectives: cuDNN's algorithm searches, their scratch and the workspace
  // growth, and every block the step allocates, happen there, so that no
  // replica calls cudaMalloc or cudaFree while a collective is in flight
  // (NCCL documents that this can deadlock). Costs one forward and backward
  // per new batch size, on GPUs with more than one replica only. Off only
  // to compare.
  bool plan_new_shapes = true;
  // GPU replicas of a single-process run: the second of consecutive steps at
  // one global batch size is captured, on each replica's streams, into a
  // CUDA graph (forward, loss, backward, the bucketed all-reduces, the
  // batch-norm combination, the fused update; runtime/step_graph.h) and
  // every later step at that size replays it with one launch. The learning
  // rate and the step index reach the graph through a small device buffer
  // written before each launch, the batch through buffers at fixed addresses.
  // A step at another size (the last partial batch) runs eagerly and drops
  // the graph, as do evaluate() and logits(), so no memory the graph uses is
  // handed to anything that outlives a step while the graph exists. Off with
  // sync_timing (it waits inside the step), and when replicas share a GPU:
  // their local communicator waits for the device on the host inside each
  // collective, which a capture cannot hold (cudaErrorStreamCaptureUnsupported,
  // seen on an H200); graphs_in_use() tells. Replayed steps equal eager steps
  // bit for bit (tests/gpu/test_gpu_cuda_graph.cpp).
  bool cuda_graphs = false;
};

class ReplicaManager {
public:
  // Builds one replica per entry of `devices` (repeats allowed) with
  // `factory`, on the replica's own thread, then copies replica 0's
  // parameters and statistics to the others.
  ReplicaManager(const ModelFactory& factory, const std::vector<Device>& devices, ReplicaOptions options = {});
  ~ReplicaManager();
  ReplicaManager(const ReplicaManager&) = delete;
  ReplicaManager& operator=(const ReplicaManager&) = delete;

  int size() const { return static_cast<int>(replicas_.size()); }  // this process's replicas
  int processes() const { return options_.processes ? options_.processes->size() : 1; }
  int process_rank() const { return options_.processes ? options_.processes->rank() : 0; }
  // True on every process when `flag` is true on any (a stop all processes agree on).
  bool any_process(bool flag);
  Model& model(int rank);
  Device device(int rank) const;
  // ReplicaOptions::cuda_graphs asked for and possible: GPU replicas, each on
  // a GPU of its own, in one process, without sync_timing.
  bool graphs_in_use() const;
  // Two or more of this process's replicas run on one device (a GPU or the CPU).
  bool replicas_share_a_device() const { return replicas_share_a_device_; }

  // One training step on a global batch in host memory. Returns the summed
  // metrics of all replicas. Throws one Error naming the replica and device
  // if any replica fails; the manager is unusable afterwards.
  // `next`, when given, is the batch the following train_step will get: on
  // GPUs its slices are copied to the devices on each replica's copy stream
  // while this step runs (when they fit the room the current batch's took),
  // so the following step starts with its data there. It must stay alive and
  // untouched until that step has returned (or the manager is destroyed); a
  // following step on another batch copies its own as usual.
  StepMetrics train_step(const HostBatch& batch, float lr, const SgdConfig& sgd, const HostBatch* next = nullptr);
  // Inference over a batch; every sample counted once whatever the split.
  StepMetrics evaluate(const HostBatch& batch);
  // Inference-mode logits [count x classes] of a batch, row-major on the host.
  std::vector<float> logits(const HostBatch& batch);

  // Gives every replica the state `sgd` keeps beside the momentum (AdamW's
  // second moment; nothing for SGD) and, with sgd.ema_decay, the moving
  // averages of the weights and statistics, starting from what the replicas
  // hold. Before the first step and before a checkpoint with that state is
  // loaded.
  void prepare_optimizer(const SgdConfig& sgd);
  // The moving averages start again from the weights and statistics the
  // replicas hold (a resumed checkpoint that kept none).
  void restart_ema();
  // Exchanges every replica's weights and statistics with their moving
  // averages (evaluation of the average, then back: twice gives the same
  // bits). Waits for the devices.
  void swap_ema();
  // Copies replica 0's parameters, optimizer state and running statistics to
  // the others (after loading a checkpoint into replica 0).
  void broadcast_from_first();
  // True when every replica's parameters, optimizer state and statistics are
  // bit-identical to replica 0's.
  bool replicas_identical();

  uint64_t step() const { return step_; }
  void set_step(uint64_t step) { step_ = step; }
  const PhaseTimes& phase_times() const { return times_; }
  void reset_phase_times();  // every replica's sums start again from zero

private:
  struct Replica;
  // Runs `job` on every replica's thread; on failure aborts the communicator
  // so no replica stays blocked, waits for all, and throws the first error.
  void run_on_all(const std::function<void(Replica&)>& job);
  int global_size() const { return size() * processes(); }
  int global_rank(int rank) const { return process_rank() * size() + rank; }
  // The rehearsal of plan_new_shapes for a batch of `batch.count` samples,
  // on every replica (and process), unless done before for that count.
  void plan_step(const HostBatch& batch);
  // Metrics of this process's replicas summed with every other process's.
  StepMetrics sum_over_processes(const StepMetrics& local);

  // A training step: train_step checks the batch and runs replica_step on
  // every replica's thread (replica_manager.cpp, top to bottom).
  void replica_step(Replica& r, const HostBatch& batch, const HostBatch* next, float lr, const SgdConfig& sgd,
                    bool graphs);
  std::pair<Tensor, Tensor> stage_slice(Replica& r, const HostBatch& batch, const HostBatch* next, const Slice& slice);
  TrainStepResult queue_device_work(Replica& r, const StepInfo& info, int64_t global, const Slice& slice,
                                    const Tensor& images, const Tensor& labels, float lr, const float* lr_on_device,
                                    const SgdConfig& sgd, StepClock& clock);

  ReplicaOptions options_;
  std::unique_ptr<Communicator> comm_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  uint64_t step_ = 0;
  std::set<int64_t> planned_counts_;  // global batch sizes rehearsed
  bool failed_ = false;
  bool replicas_share_a_device_ = false;
  PhaseTimes times_;
};

}  // namespace lockstep
