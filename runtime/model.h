#pragma once
// The interface the replica manager drives. A Model is one replica's copy of
// the network on one device: its arenas, its batch-norm statistics, and the
// forward/backward pass of a slice of the global batch. layers/graph.h
// implements it; the engine knows no layer.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/arena.h"
#include "runtime/context.h"
#include "runtime/step.h"
#include "runtime/tensor.h"

namespace lockstep {

// One batch-norm layer's statistics. A training forward writes the batch mean
// and biased variance of its slice (per channel) and the number of values per
// channel behind them; the running statistics are left alone and updated by
// the replica manager from the statistics combined over all replicas.
struct BatchNormState {
  std::string name;
  Tensor batch_mean, batch_var;       // [C], written by each training forward
  Tensor running_mean, running_var;   // [C], views into the state arena
  int64_t values_per_channel = 0;     // N*H*W of the last training forward
  float momentum = 0.1f;              // PyTorch convention: new = (1-m)*old + m*batch
};

// Loss sum (unscaled cross-entropy summed over the slice), correct top-1
// predictions and samples seen.
struct StepMetrics {
  double loss_sum = 0.0;
  int64_t correct = 0;
  int64_t count = 0;
  StepMetrics& operator+=(const StepMetrics& o) {
    loss_sum += o.loss_sum;
    correct += o.correct;
    count += o.count;
    return *this;
  }
};

// Metrics a training step may have left on the device: a read-back that
// waits for the context's compute stream (the step's one host
// synchronisation) and returns them. Called once, at the end of the step.
using MetricsReadback = std::function<StepMetrics()>;

// What Model::train_step returns: the slice's metrics, which on a GPU are
// still on the device (a step makes no host synchronisation before its end),
// and time marks (Context::mark_time) at the start of forward, the end of
// forward and the end of backward (-1 for an empty slice).
struct TrainStepResult {
  StepMetrics host_metrics;      // final when there is no read-back (the CPU)
  MetricsReadback read_back;     // set when the metrics are still on the device
  int forward_mark = -1, backward_mark = -1, end_mark = -1;
  // The metrics, reading them back (and waiting for the device) when needed.
  StepMetrics metrics() const { return read_back ? read_back() : host_metrics; }
};

// Called during backward each time the gradients from `first_ready_offset` to
// the end of the gradient arena are final (parameters are laid out in forward
// order, so backward finishes them from the end), so a bucket can be sent.
using GradReadyCallback = std::function<void(int64_t first_ready_offset)>;

class Model {
public:
  virtual ~Model() = default;
  virtual Device device() const = 0;
  virtual std::string spec() const = 0;         // what builds the same model again
  virtual Shape input_shape() const = 0;        // [C, H, W] of one sample
  virtual int64_t num_classes() const = 0;
  virtual ParameterArenas& arenas() = 0;
  virtual Tensor& state_arena() = 0;            // running statistics, flat
  virtual std::vector<ParamEntry> state_entries() const = 0;
  virtual std::vector<BatchNormState*> batch_norms() = 0;
  // The training loss's label smoothing (ops/loss.h), 0 for none: a setting
  // of the run, given once (ReplicaOptions::label_smoothing); evaluation
  // reports the plain loss.
  virtual void set_label_smoothing(float e) = 0;

  // Forward and backward of a slice in training mode, as part of `step`:
  // writes every gradient (an empty slice writes zeros) with the loss scaled by
  // `loss_scale` (the manager passes 1/B), and each BN layer's batch statistics.
  virtual TrainStepResult train_step(Context& ctx, const StepInfo& step, const Tensor& images, const Tensor& labels,
                                     float loss_scale, const GradReadyCallback& on_grad_ready = {}) = 0;
  // Inference mode (running statistics, no dropout): loss and accuracy.
  virtual StepMetrics evaluate(Context& ctx, const Tensor& images, const Tensor& labels) = 0;
  // Inference mode logits [N, classes].
  virtual Tensor logits(Context& ctx, const Tensor& images) = 0;
};

// Builds a fresh model on a device; the replica manager calls it once per replica.
using ModelFactory = std::function<std::unique_ptr<Model>(Device)>;

}  // namespace lockstep
