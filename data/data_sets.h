#pragma once
// What a data path opens into, and the options it is opened with: the types
// open_dataset (data/open_dataset.h) returns and the decoded-image cache
// (data/cache_reader.h, data/cache_writer.h) reads and writes, apart from
// both so the cache's reader and open_dataset do not include each other.
#include <cstdint>
#include <memory>
#include <string>

#include "data/dataset.h"
#include "data/image_folder.h"

namespace lockstep::data {

struct DataOptions {
  // Image folders: decoded as grey (1) or RGB (3) and resized to height x width.
  int64_t channels = 3;
  int64_t height = 32;
  int64_t width = 32;
  bool cache_images = false;     // keep decoded images in memory
  // Or keep them when all the image folders opened fit this many bytes
  // decoded (uint8 at the target size); 0: only with cache_images.
  int64_t cache_budget_bytes = 0;
  bool skip_bad_images = false;  // leave bad images out (reported) instead of stopping
  int64_t max_image_pixels = kDefaultMaxImagePixels;  // images declaring more pixels are refused
  double test_fraction = 0.1;    // folders without a test set
  uint64_t split_seed = 0;
  int64_t num_classes = 10;      // IDX and CIFAR-10: labels must lie in [0, num_classes)
  // Image folders: how the training and the test images fit height x width
  // (ImageFolderOptions::center_crop): 0 stretched; f in (0, 1] the centred
  // window over f of the shorter side, aspect kept. With random-resized-crop
  // training, 1 for training (the crop then draws from the whole window) and
  // 0.875 for testing, as torchvision's ImageNet recipe.
  double train_center_crop = 0.0;
  double test_center_crop = 0.0;
  // Image folders: read the decoded-image cache file beside the folder
  // (data/cache_reader.h) instead when it holds these samples and is current.
  bool use_cache_file = true;
};

enum class DataFormat { idx, cifar10, image_folder };
const char* format_name(DataFormat format);  // "IDX", "CIFAR-10", "image folder"

struct DataSets {
  DataFormat format = DataFormat::idx;
  std::shared_ptr<const Dataset> train;  // null from open_test_dataset
  std::shared_ptr<const Dataset> test;
  BadFiles skipped;  // images left out while scanning (skip_bad_images)
  bool split = false;  // the test set was split off the training folder (test_fraction); null when 0
  // Image folders: the bytes their decoded samples take, and whether they
  // are kept in memory after the first read (cache_images, or within
  // cache_budget_bytes).
  int64_t decoded_bytes = 0;
  bool decoded_kept = false;
  // The decoded-image cache file the samples are read from (empty: none),
  // and why one found beside the folder was not used (empty: no such cache).
  std::string cache_file, cache_note;
};

}  // namespace lockstep::data
