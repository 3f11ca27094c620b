#pragma once
// Writing a decoded-image cache file (its layout: data/cache_format.h): an
// image folder opened as open_dataset (data/open_dataset.h) opens it, decoded
// once. The reader (data/cache_reader.h) does not depend on this half.
#include <cstdint>
#include <functional>
#include <string>

#include "data/cache_format.h"
#include "data/data_sets.h"

namespace lockstep::data {

struct CacheWriteOptions {
  std::string output;   // empty: default_cache_path(folder)
  std::string command;  // the command that rebuilds the cache, for messages (empty: cache_command)
  int threads = 1;      // decoding threads
  // Called after each batch of samples written: done of total.
  std::function<void(int64_t done, int64_t total)> progress;
};

struct CacheWriteSummary {
  std::string path;
  int64_t samples = 0, train = 0, test = 0;
  int64_t bytes = 0;  // the file's size
  BadFiles skipped;
};

// Decodes the image folder at `folder` as open_dataset(folder, options) opens
// it and writes the cache file. Under options.skip_bad_images an image that
// fails only while decoding is left out too, and told in `skipped`. Throws lockstep::Error naming the file when
// another writer holds the lock, when the folder is not an image folder, or
// when writing fails (the temporary file is then removed; the old cache stays).
CacheWriteSummary write_cache_file(const std::string& folder, const DataOptions& options,
                                   const CacheWriteOptions& write = {});

}  // namespace lockstep::data
