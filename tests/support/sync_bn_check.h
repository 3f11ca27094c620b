#pragma once
// The --sync-bn check shared by the CPU and the emulated-GPU tests: resnet20
// trained for some steps at a real learning rate on N replicas and on one,
// compared normwise (||a - b|| / ||b||) over the parameters, and over the
// running statistics.
#include <vector>

#include "runtime/device.h"

namespace lockstep::testing {

struct SyncBnDifference {
  double parameters = 0.0;
  double statistics = 0.0;
};

// `many` runs the N replicas, `one` the single one; `sync` sets
// ContextOptions::sync_batch_norm on the N replicas.
SyncBnDifference sync_bn_difference(const std::vector<Device>& many, Device one, bool sync, int steps,
                                    float lr = 0.1f);

}  // namespace lockstep::testing
