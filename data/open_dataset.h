#pragma once
// Opens a data path by what it holds, so one --data flag serves every format:
//   a decoded-image cache file (lockstep cache; data/cache_format.h) -> its image folder's sets
//   IDX files (train-images-idx3-ubyte[.gz] and the other three)  -> IDX
//   CIFAR-10 batches (data_batch_*.bin, test_batch.bin)           -> CIFAR-10
//   train/ beside test/, val/, valid/ or validation/ (any case), or
//   TrainData/ beside ValidationData/: folders of class sub-folders -> image folders
//   train/ alone, or any other folder: one sub-folder per class     -> image folder, split
// IDX and CIFAR-10 keep their own test files; a lone image folder is split
// per class with test_fraction and split_seed.
#include <string>
#include <vector>

#include "data/data_sets.h"

namespace lockstep::data {

// Throws lockstep::Error naming the path when it cannot be read or is none of
// the formats, and naming the file for every error of the readers. An image
// folder with a current cache file beside it (DATA.lockstep-cache) is read
// from the cache (use_cache_file).
DataSets open_dataset(const std::string& path, const DataOptions& options = {});

// A test set on its own (--test-data): the test files of an IDX or CIFAR-10
// folder, the test part of a split folder (that of a train/ folder alone is
// split off as open_dataset does, with test_fraction and split_seed), or a whole folder
// of class sub-folders, labelled by `train_classes` when given so that its
// labels match the training set's.
DataSets open_test_dataset(const std::string& path, const DataOptions& options = {},
                           const std::vector<std::string>& train_classes = {});

// The default data set, Fashion-MNIST: the folder $LOCKSTEP_FASHION_MNIST
// names when set (a machine without Debian's package, e.g. a GPU machine
// given a copy), else Debian's dataset-fashion-mnist.
std::string default_data_path();

}  // namespace lockstep::data
