#pragma once
// CIFAR-10 binary batches: records of 1 label byte and 3072 pixel bytes (the
// red, green, blue 32x32 planes in turn), data_batch_1..5.bin and test_batch.bin.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace lockstep::data {

// Reads and concatenates the batch files, in the order given. Throws
// lockstep::Error naming the file when it is not a whole number of records,
// is empty, or holds a label outside [0, class_names.size()).
std::shared_ptr<InMemoryDataset> read_cifar10(const std::vector<std::string>& batch_files,
                                              std::vector<std::string> class_names);

struct CifarFiles {
  std::vector<std::string> train;  // data_batch_*.bin, by number
  std::string test;                // test_batch.bin
  std::string meta;                // batches.meta.txt, or "" when absent
};
// The CIFAR-10 files in `dir` or in its cifar-10-batches-bin sub-folder;
// nullopt when there are none; throws naming what is missing when the
// training or the test batches are absent.
std::optional<CifarFiles> find_cifar10_files(const std::string& dir);

// The names in batches.meta.txt (one a line) when it has `num_classes`,
// else CIFAR-10's ten names.
std::vector<std::string> cifar10_class_names(const std::string& meta_path, int64_t num_classes);

}  // namespace lockstep::data
