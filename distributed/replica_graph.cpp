#include "distributed/replica_graph.h"

#include <cstring>

#include "runtime/allocator.h"

namespace lockstep {

bool ReplicaGraph::follows(int64_t global) {
  if (global == global_) return true;
  drop();
  global_ = global;
  return false;
}

void ReplicaGraph::drop() { *this = ReplicaGraph{}; }

void ReplicaGraph::stage(Context& ctx, const Tensor& images, const Tensor& labels, float lr, uint64_t step) {
  if (!images_.defined()) {
    images_ = Tensor::empty(images.shape(), ctx.device(), images.dtype());
    labels_ = Tensor::empty(labels.shape(), ctx.device(), labels.dtype());
    values_host_ = Tensor::empty_with(Shape{4}, pinned_host_allocator());
    values_ = Tensor::empty(Shape{4}, ctx.device());
  }
  // The previous step's read-back waited for the compute stream, so the
  // copy that last read the pinned values is over.
  float* v = values_host_.data();
  v[0] = lr;
  v[1] = 0.0f;
  std::memcpy(v + 2, &step, sizeof step);
  ctx.copy(values_host_, values_);
  ctx.copy(images, images_);
  ctx.copy(labels, labels_);
}

void ReplicaGraph::keep(std::unique_ptr<StepGraph> graph, TrainStepResult result) {
  graph_ = std::move(graph);
  result_ = std::move(result);
}

}  // namespace lockstep
