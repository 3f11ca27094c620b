#pragma once
// A stratified train/test split for data sets that come without a test set:
// each class gives the same fraction of its samples to the test side.
#include <cstdint>
#include <memory>
#include <vector>

#include "data/dataset.h"

namespace lockstep::data {

struct SplitIndices {
  std::vector<int64_t> train, test;  // ascending
};

// For each class with n samples, round(test_fraction * n) of them (drawn with
// `seed` and the class; at most n - 1, so every class keeps a training sample)
// go to test, the rest to train. test_fraction lies in [0, 1).
SplitIndices stratified_split(const std::vector<int32_t>& labels, int64_t num_classes, double test_fraction,
                              uint64_t seed);

struct TrainTest {
  std::shared_ptr<const Dataset> train, test;
};
TrainTest split_dataset(std::shared_ptr<const Dataset> dataset, double test_fraction, uint64_t seed);

}  // namespace lockstep::data
