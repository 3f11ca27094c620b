#pragma once
// The --sync-bn check shared by the CPU and the emulated-GPU tests: resnet20
// trained for some steps at a real learning rate on N replicas and on one,
// compared normwise (||a - b|| / ||b||) over the parameters, and over the
// running statistics.
#include <vector>

#include "kernels/memory_format.h"
#include "runtime/device.h"

namespace lockstep::testing {

struct SyncBnDifference {
  double parameters = 0.0;
  double statistics = 0.0;
};

// The learning rate the --sync-bn tests train at: a real one (the models
// learning test trains resnets at it), below the edge where this small
// resnet20 setup turns one-ulp differences into 1e-4 (see the .cpp).
inline constexpr float kSyncBnLearningRate = 0.005f;

// `many` runs the N replicas, `one` the single one (on one compute thread);
// `sync` sets ContextOptions::sync_batch_norm on both; `many_threads` is the
// CPU compute pool's thread count while the N replicas step; both sides lay
// their activations out in `format` (ContextOptions::memory_format).
SyncBnDifference sync_bn_difference(const std::vector<Device>& many, Device one, bool sync, int steps,
                                    float lr = kSyncBnLearningRate, int many_threads = 1,
                                    MemoryFormat format = MemoryFormat::nchw);

}  // namespace lockstep::testing
