#pragma once
// Reading a decoded-image cache file (its layout: data/cache_format.h) as the
// data sets of the folder it was made from; open_dataset (data/open_dataset.h)
// reads one through here, given or found beside a folder.
#include <cstdint>
#include <optional>
#include <string>

#include "data/cache_format.h"
#include "data/data_sets.h"

namespace lockstep::data {

// What a cache file's samples were made with that a run need not repeat:
// `lockstep train --data FILE` takes these from the file when they are not
// given. (--seed is not taken: it also draws the training order.)
struct CacheMadeWith {
  int64_t channels = 0, height = 0, width = 0;  // --input
  bool split = false;                           // the folder was split per class
  double test_fraction = 0.0;                   // --test-fraction, when split
  int64_t max_image_pixels = 0;                 // --max-image-pixels
};
// Throws lockstep::Error naming the file when it is not a whole cache file of
// this version (as open_cache_file would).
CacheMadeWith read_cache_options(const std::string& path);

// Opens a cache file as open_dataset opens a folder (train and test parts).
// Throws lockstep::Error naming the file and what is wrong: not a cache file,
// another version, cut short, a damaged header, metadata or labels (their
// checksums), options other than `options` (--input, centre crops, split),
// or, when its source folder is there, files added, removed or changed since
// (with the command that rebuilds it). A damaged sample is told when it is read.
DataSets open_cache_file(const std::string& path, const DataOptions& options);

// The cache file beside an image folder (default_cache_path), as open_dataset
// uses it: nullopt when there is none, or when it holds other samples than
// `options` ask (`note` then says so); throws, as open_cache_file, when it
// is damaged or stale: a cache the user made is not passed over in silence.
std::optional<DataSets> open_cache_beside(const std::string& folder, const DataOptions& options, std::string& note);

}  // namespace lockstep::data
