#pragma once
// The decoded-image cache file: an image folder decoded once, at one input
// size, into a file that is trained from (read with pread: see OpenCache in
// cache_file.cpp for why not a mapping). Its samples are
// the bytes the folder loader's decode and resize give (decode_image with the
// same options), in the same order, with the same labels and the same
// train/test split, so training from the cache equals training from the folder.
//
// File format, version 1 (every integer little-endian):
//
//   offset  size  field
//        0    16  magic "lockstep-cache\n\0"
//       16     4  version (1)
//       20     4  CRC-32 of these 128 header bytes, this field read as 0
//       24     8  file size in bytes (a cut file is told by it)
//       32     8  metadata offset          40  8  metadata size
//       48     4  metadata CRC-32          52  4  0
//       56     8  labels offset            64  8  labels size (4 per sample)
//       72     4  labels CRC-32            76  4  0
//       80     8  sample-sums offset       88  8  sample-sums size (4 per sample)
//       96     4  sample-sums CRC-32      100  4  0
//      104     8  pixels offset (a multiple of 4096: page-aligned reads)
//      112     8  pixels size (samples x bytes per sample)
//      120     8  bytes per sample (C*H*W)
//
//   metadata     JSON (UTF-8): "format" ("lockstep decoded-image cache");
//                "input" [C, H, W]; "options" (what changes
//                which pixels and which split: channels, height, width,
//                train_center_crop, test_center_crop, max_image_pixels,
//                skip_bad_images, test_fraction, split_seed); "source" (the
//                folder's absolute path); "class_names"; "split" (the test
//                set was split off one folder); "train" and "test" (how many
//                samples each part has: the train samples come first);
//                "files" (the manifest: every image file under the folder as
//                [relative path, size in bytes, modification time in ns]);
//                "sample_files" (each sample's index into "files"); "command"
//                (the command that rebuilds the cache); "skipped" (bad images
//                left out, [path, why]). A path or name that is not UTF-8 is
//                {"hex": "<its bytes in hex>"} instead of a string.
//   labels       int32 per sample
//   sample sums  CRC-32 per sample of its pixels, checked on every read
//   pixels       uint8, sample after sample, each channel-major [C, H, W]
//
// Writers take an exclusive flock on FILE.lock and write FILE.tmp.<pid> in
// the same folder, fsync it and rename it over FILE: a reader sees the old
// file or the new one whole, and a killed writer leaves only its temporary
// file, which the next writer removes.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/open_dataset.h"

namespace lockstep::data {

inline constexpr uint32_t kCacheFileVersion = 1;
// The cache file `lockstep cache` writes for a folder and `lockstep train`
// picks up by itself: beside the folder, DATA.lockstep-cache.
inline constexpr const char* kCacheFileSuffix = ".lockstep-cache";
std::string default_cache_path(const std::string& folder);

// The `lockstep cache` command that writes the cache of `folder` for
// `options` to `output` (its flags as lockstep train's): what messages tell
// the user to run. `split`: the folder is split per class (--test-fraction, --seed).
std::string cache_command(const std::string& folder, const DataOptions& options, bool split, const std::string& output);

// True when `path` is a regular file whose bytes begin as a cache file's
// do: a cache, whole or cut short (even to nothing), which open_cache_file
// then accepts or refuses saying why.
bool is_cache_file(const std::string& path);

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
