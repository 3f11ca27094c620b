#pragma once
// Training the same model in either memory format (ContextOptions::
// memory_format) through the replica manager, for the tests that NHWC
// trains as NCHW (CPU and GPU): a few steps of shrinking and growing batch
// sizes with dropout on, the outcome, and the held-out logits after each step.
#include <string>
#include <vector>

#include "kernels/memory_format.h"

#include "distributed/replica_manager.h"
#include "runtime/arena.h"
#include "support/run_outcome.h"

namespace lockstep::testing {

struct FormatRun {
  RunOutcome outcome;
  std::vector<std::vector<float>> logits;  // of a held-out batch, after each step
  MemoryFormat activation_format = MemoryFormat::nchw;  // replica 0's graph laid its values out so
  DType activation_dtype = DType::f32;                  // and stored them as
  int64_t activation_bytes = 0;                         // in a buffer of this size
  std::vector<ParamEntry> entries;  // where each parameter (and its momentum) lies in `outcome`
};

// Trains `name` (named_model, dropout on, seed 5) on `devices` for samples of
// `sample` with `options` (its context's memory format is the one trained in),
// one step per batch size of `batches`.
FormatRun train_in_format(const std::string& name, const Shape& sample, const std::vector<Device>& devices,
                          ReplicaOptions options, const std::vector<int64_t>& batches = {8, 5, 8});

}  // namespace lockstep::testing
