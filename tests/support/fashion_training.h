#pragma once
// A Fashion-MNIST subset and a short training on it, shared by the precision
// modes' accuracy tests on the CPU (tests/cpu/test_precision_training.cpp)
// and on the GPU (tests/gpu/test_gpu_precision_training.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/batch_source.h"
#include "runtime/device.h"
#include "runtime/precision.h"

namespace lockstep::testing {

struct FashionSubset {
  std::vector<HostBatch> train;  // consecutive batches of 32 of the training set
  std::vector<HostBatch> test;   // the first 4000 test samples in batches of 250
};

// The first `steps` * 32 training samples and 4000 test samples, normalised
// by Fashion-MNIST's mean and standard deviation; read once per process
// (the first call's `steps` sets how many).
const FashionSubset& fashion_subset(int64_t steps);

// Test accuracy (%) of `name` (weights drawn from `seed`, no dropout) after one pass
// over the subset's first `steps` batches on `device` in `precision`, the
// learning rate decaying linearly to zero: the weights settle at the end, so
// the batch-norm running statistics the evaluation uses have caught up with
// them (after a few dozen steps at a constant rate, resnet20's test accuracy
// still swings by tens of points with them). Evaluated on the first
// `test_samples` test samples (a multiple of 250, at most 4000).
double accuracy_after_training(const std::string& name, Precision precision, Device device, int64_t steps,
                               int64_t test_samples = 2000, uint64_t seed = 5);

}  // namespace lockstep::testing
