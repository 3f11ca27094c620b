#pragma once
// One GPU replica's CUDA-graph step (ReplicaOptions::cuda_graphs): the graph
// captured for the global batch size of the steps before, the buffers at
// fixed addresses it reads the batch slice and the per-step values from, and
// the captured step's metrics read-back, which reads what each launch wrote.
//
// A graph lives only while consecutive steps have one global batch size and
// nothing else runs on the replica: then no memory the graph's kernels use
// between a capture's allocations and frees can have been handed to anything
// that outlives a step (the caching allocator has no pool of its own for
// graphs), and every step before a capture has run at its shapes eagerly
// (cuDNN searches, workspace and allocator growth done: none of it may
// happen inside a capture).
#include <cstdint>
#include <memory>

#include "runtime/context.h"
#include "runtime/model.h"
#include "runtime/step_graph.h"
#include "runtime/tensor.h"

namespace lockstep {

class ReplicaGraph {
public:
  // Called once per step: true when the step before was at the same global
  // batch size, so this one may replay (or capture) the graph; otherwise the
  // graph is dropped and the size remembered.
  bool follows(int64_t global);
  // Forgets the graph and the size (other work ran on the replica). The last
  // launch must be over: every step ends with a read-back.
  void drop();

  // Queues, on the compute stream, the copies of this step's slice into the
  // graph's input buffers and of `lr` and `step` into its value buffer
  // (allocated on the first call after a drop, before any capture).
  void stage(Context& ctx, const Tensor& images, const Tensor& labels, float lr, uint64_t step);
  const Tensor& images() const { return images_; }
  const Tensor& labels() const { return labels_; }
  const float* lr_on_device() const { return values_.data(); }
  const uint64_t* step_on_device() const { return reinterpret_cast<const uint64_t*>(values_.data() + 2); }

  bool captured() const { return graph_ != nullptr; }
  void keep(std::unique_ptr<StepGraph> graph, TrainStepResult result);
  void launch(Context& ctx) { graph_->launch(ctx); }
  // What the captured step returned: its read-back reads what each launch
  // wrote (none: an empty slice, and the caller waits itself).
  const TrainStepResult& result() const { return result_; }

private:
  int64_t global_ = -1;
  std::unique_ptr<StepGraph> graph_;
  Tensor images_, labels_;
  // [lr, unused, step (8 bytes)]: pinned on the host, and where the kernels read them.
  Tensor values_host_, values_;
  TrainStepResult result_;
};

}  // namespace lockstep
