#pragma once
// What a data set is, told cheaply: enough to see that two processes of one
// run, or a checkpoint and a later command, hold the same samples under the
// same labels, without reading every sample. Paths are not part of it: the
// same data may lie in another folder on another host.
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace lockstep::data {

struct DataIdentity {
  int64_t samples = 0;
  std::string sample_shape;              // "1x28x28"
  std::vector<std::string> class_names;
  std::vector<int64_t> class_counts;     // samples per class, in class order
  // CRC-32 (8 hex digits) of every label in sample order and of the pixels
  // of the first, middle and last samples: another order, another split or
  // other images of the same counts change it.
  std::string fingerprint;
};

DataIdentity data_identity(const Dataset& data);

}  // namespace lockstep::data
