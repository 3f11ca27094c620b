#pragma once
// The decoded-image cache file: an image folder decoded once, at one input
// size, into a file that is trained from (read with pread: see OpenCache in
// cache_reader.cpp for why not a mapping). Its samples are
// the bytes the folder loader's decode and resize give (decode_image with the
// same options), in the same order, with the same labels and the same
// train/test split, so training from the cache equals training from the folder.
//
// This file holds what the writer (cache_writer.h) and the reader
// (cache_reader.h) share: the layout below, its codec, and the listing of
// the folder a cache is checked against.
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
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "data/data_sets.h"

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

// ---- shared by the writer and the reader ----
namespace cache_format {

inline constexpr char kMagic[16] = "lockstep-cache\n";  // and a final '\0'
inline constexpr size_t kHeaderBytes = 128;
inline constexpr uint64_t kPixelAlign = 4096;

uint32_t crc(const uint8_t* data, size_t size);
void put_u32(uint8_t* at, uint32_t v);
void put_u64(uint8_t* at, uint64_t v);
uint32_t get_u32(const uint8_t* at);
uint64_t get_u64(const uint8_t* at);
uint64_t round_up(uint64_t value, uint64_t align);

// Paths and class names are bytes, not always UTF-8, which JSON strings must
// be: such a text is kept as {"hex": "..."} instead, and read back exactly.
nlohmann::json text_json(const std::string& text);
std::string json_text(const nlohmann::json& j);

// The fixed header, as the comment above lays it out.
struct Section {
  uint64_t offset = 0, size = 0;
  uint32_t crc = 0;
};
struct Header {
  uint32_t version = kCacheFileVersion;
  uint64_t file_size = 0;
  Section metadata, labels, sums;
  uint64_t pixels_offset = 0, pixels_size = 0, sample_bytes = 0;
};
std::vector<uint8_t> encode_header(const Header& h);

std::string errno_text();

// The manifest: the image files under a folder, with size and time.
struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};
// Every image file the folder loader could list under `root` (in a
// sub-folder, at any depth, links followed, hidden entries left out), by path
// relative to `root`.
std::map<std::string, FileStamp> list_folder(const std::string& root);
std::string absolute_folder(const std::string& folder);

// What changes pixels, labels or the split, as the metadata's "options" holds it.
nlohmann::json options_json(const DataOptions& o);
std::string input_text(int64_t c, int64_t h, int64_t w);
std::string number(double v);

}  // namespace cache_format

}  // namespace lockstep::data
