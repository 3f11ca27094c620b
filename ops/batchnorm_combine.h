#pragma once
// BatchNormCombiner: the exact combination of one replica's batch-norm
// statistics with the other replicas' (docs/architecture.md, "Batch-norm
// statistics across replicas"), for every BN layer of a model at once, on the
// replica's device, in double:
//   1. pack_means(): weight * mean of every channel and each layer's count,
//      one packed buffer (kernels/bn_combine.h)  -> the caller sums it over replicas
//   2. variance_terms(): weight * (var + (mean - m)^2) around the combined
//      mean m                                     -> the caller sums it over replicas
//   3. update_running(): the running statistics from the combined values.
// On a GPU each phase is one kernel on the compute stream and nothing waits
// for the device; the layer table goes to the device through pinned memory,
// copied again only when it changes (a batch of another size, moved
// buffers), which happens after the previous step's end-of-step read-back.
// With one replica the caller skips the sums, and the update equals
// batchnorm_update_running with the replica's own statistics.
#include <cstdint>
#include <vector>

#include "kernels/bn_combine.h"
#include "runtime/context.h"
#include "runtime/model.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

class BatchNormCombiner {
public:
  // A range of the packed buffer on the context's device, to all-reduce.
  struct Range {
    double* data = nullptr;
    int64_t count = 0;
  };

  BatchNormCombiner() = default;
  // The layers' statistics tensors must stay where they are between the phases.
  void pack_means(Context& ctx, const std::vector<BatchNormState*>& layers, double weight);
  Range means_and_counts();
  void variance_terms(Context& ctx, double weight);
  Range variances();
  void update_running(Context& ctx);

private:
  // Rebuilds the host table (pointers, counts) and, on a GPU, queues its copy to the device.
  void build_table(Context& ctx, const std::vector<BatchNormState*>& layers);
  const BnCombineLayer* table_on_device() const;
  double* packed();

  std::vector<BnCombineLayer> table_;
  std::vector<BnCombineLayer> uploaded_;  // what the device table holds
  BnCombineSizes sizes_;
  int64_t max_channels_ = 0;
  Tensor packed_;       // 2C + L doubles on the context's device (in a float tensor's bytes)
  Tensor table_pinned_; // the table in pinned host memory (GPU)
  Tensor table_device_; // and on the device
};

}  // namespace lockstep::ops
