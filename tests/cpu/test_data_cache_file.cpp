// The decoded-image cache file (data/cache_format.h): the folder loader's
// samples exactly, and every damaged, foreign, mismatched or stale file
// refused with the file named.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>

#include "base/error.h"
#include "data/cache_reader.h"
#include "data/cache_writer.h"
#include "data/open_dataset.h"
#include "test_data_util.h"

using namespace lockstep;
using namespace lockstep::data;
using data_test::TempDir;
namespace fs = std::filesystem;

namespace {

auto pattern(int seed) {
  return [=](int y, int x, int c) { return (seed * 37 + y * 11 + x * 7 + c * 53) % 256; };
}

// PNG and JPEG of several sizes and colours, in three classes.
void write_classes(const std::string& root) {
  data_test::write_png(root + "/cat/a.png", 20, 14, 3, data_test::make_image(20, 14, 3, pattern(1)));
  data_test::write_jpg(root + "/cat/b.jpg", 33, 25, 3, data_test::make_image(33, 25, 3, pattern(2)));
  data_test::write_png(root + "/cat/c.png", 9, 9, 1, data_test::make_image(9, 9, 1, pattern(3)));
  data_test::write_jpg(root + "/dog/d.jpg", 40, 18, 3, data_test::make_image(40, 18, 3, pattern(4)));
  data_test::write_png(root + "/dog/e.png", 6, 12, 3, data_test::make_image(6, 12, 3, pattern(5)));
  data_test::write_png(root + "/dog/f.png", 15, 15, 3, data_test::make_image(15, 15, 3, pattern(6)));
  data_test::write_png(root + "/eel/g.png", 16, 10, 3, data_test::make_image(16, 10, 3, pattern(7)));
  data_test::write_jpg(root + "/eel/nested/h.jpg", 24, 24, 1, data_test::make_image(24, 24, 1, pattern(8)));
  data_test::write_png(root + "/eel/i.png", 11, 13, 3, data_test::make_image(11, 13, 3, pattern(9)));
}

DataOptions options(int64_t size, double test_fraction = 0.4) {
  DataOptions o;
  o.channels = 3;
  o.height = o.width = size;
  o.test_fraction = test_fraction;
  o.split_seed = 5;
  return o;
}

DataOptions folder_only(DataOptions o) {
  o.use_cache_file = false;
  return o;
}

std::vector<float> read(const Dataset& d, int64_t index) {
  std::vector<float> x(static_cast<size_t>(d.sample_shape().numel()));
  d.read(index, x.data());
  return x;
}

void require_same(const Dataset& folder, const Dataset& cache) {
  REQUIRE(cache.size() == folder.size());
  REQUIRE(cache.sample_shape() == folder.sample_shape());
  REQUIRE(cache.class_names() == folder.class_names());
  REQUIRE(cache.labels() == folder.labels());
  REQUIRE(cache.in_memory() == folder.in_memory());
  for (int64_t i = 0; i < folder.size(); ++i) {
    INFO("sample " << i << ": " << folder.sample_name(i));
    REQUIRE(cache.sample_name(i) == fs::absolute(folder.sample_name(i)).lexically_normal().string());
    REQUIRE(read(cache, i) == read(folder, i));
  }
}

void require_same_sets(const DataSets& folder, const DataSets& cache) {
  REQUIRE(cache.format == DataFormat::image_folder);
  REQUIRE(cache.split == folder.split);
  require_same(*folder.train, *cache.train);
  REQUIRE((cache.test != nullptr) == (folder.test != nullptr));
  if (folder.test) require_same(*folder.test, *cache.test);
}

// The message of what `f` throws; fails when it throws nothing.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("no error thrown");
  return "";
}

void require_contains(const std::string& message, std::initializer_list<std::string> parts) {
  INFO(message);
  for (const std::string& part : parts) REQUIRE(message.find(part) != std::string::npos);
}

std::vector<uint8_t> bytes_of(const std::string& path) { return data_test::read_all(path); }

uint32_t le32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}
uint64_t le64(const std::vector<uint8_t>& b, size_t at) {
  return uint64_t(le32(b, at)) | uint64_t(le32(b, at + 4)) << 32;
}

std::string write_cache(const std::string& folder, const DataOptions& o, const std::string& output = "") {
  CacheWriteOptions w;
  w.output = output;
  w.threads = 2;
  return write_cache_file(folder, o, w).path;
}

// A folder of images and its cache file, pets.cache, as written.
struct CachedFolder {
  TempDir dir;
  std::string folder = dir / "pets";
  std::string cache;
  std::vector<uint8_t> bytes;
  CachedFolder() {
    write_classes(folder);
    cache = write_cache(folder, options(8), dir / "pets.cache");
    bytes = bytes_of(cache);
  }
};

}  // namespace

TEST_CASE("cache file: the folder loader's samples, labels and split, bit for bit", "[data][data-cache]") {
  TempDir dir;
  const std::string folder = dir / "pets";
  write_classes(folder);
  SECTION("one folder, split per class") {
    const std::string cache = write_cache(folder, options(8), dir / "pets.cache");
    const DataSets from_cache = open_dataset(cache, options(8));
    REQUIRE(from_cache.cache_file == cache);
    require_same_sets(open_dataset(folder, options(8)), from_cache);
    REQUIRE(from_cache.test->size() > 0);
  }
  SECTION("train/ beside test/") {
    write_classes(dir / "split/train");
    write_classes(dir / "split/val");
    fs::remove(dir / "split/val/dog/f.png");
    const std::string cache = write_cache(dir / "split", options(7));
    REQUIRE(cache == dir / "split.lockstep-cache");
    require_same_sets(open_dataset(dir / "split", folder_only(options(7))), open_dataset(cache, options(7)));
  }
  SECTION("kept aspect ratio: a centre crop for training, another for testing") {
    DataOptions o = options(9);
    o.train_center_crop = 1.0;
    o.test_center_crop = 0.875;
    const std::string cache = write_cache(folder, o);
    require_same_sets(open_dataset(folder, folder_only(o)), open_dataset(cache, o));
  }
  SECTION("no test part") {
    const std::string cache = write_cache(folder, options(8, 0.0));
    const DataSets sets = open_dataset(cache, options(8, 0.0));
    REQUIRE(sets.test == nullptr);
    require_same_sets(open_dataset(folder, folder_only(options(8, 0.0))), sets);
    REQUIRE_THROWS_WITH(open_test_dataset(cache, options(8, 0.0)),
                        Catch::Contains(cache) && Catch::Contains("no test part"));
  }
  SECTION("a test set for other classes, or a cache of a cache: refused") {
    const std::string cache = write_cache(folder, options(8));
    require_contains(error_of([&] {
                       open_test_dataset(cache, options(8), {"ant", "bee", "cat"});
                     }),
                     {cache, "other classes"});
    REQUIRE(open_test_dataset(cache, options(8), {"cat", "dog", "eel"}).test->size() > 0);
    require_contains(error_of([&] { write_cache(cache, options(8), dir / "again.cache"); }),
                     {cache, "a cache file already"});
  }
  SECTION("class folders and files whose names are not UTF-8") {
    const std::string bytes = dir / "caf\xe9";
    write_classes(bytes);
    fs::rename(bytes + "/dog", bytes + "/d\xf6g");
    fs::rename(bytes + "/cat/a.png", bytes + "/cat/\xff.png");
    const std::string cache = write_cache(bytes, options(8));
    const DataSets sets = open_dataset(cache, options(8));
    REQUIRE(sets.train->class_names()[1] == "d\xf6g");
    require_same_sets(open_dataset(bytes, folder_only(options(8))), sets);
    fs::remove(bytes + "/cat/\xff.png");
    require_contains(error_of([&] { open_dataset(cache, options(8)); }), {"cat/\xff.png was removed"});
  }
  SECTION("grey") {
    DataOptions o = options(6);
    o.channels = 1;
    const std::string cache = write_cache(folder, o);
    require_same_sets(open_dataset(folder, folder_only(o)), open_dataset(cache, o));
    require_same(*open_dataset(folder, folder_only(o)).test, *open_test_dataset(cache, o).test);
  }
}

TEST_CASE("cache file: found beside the folder and used while it is current", "[data][data-cache]") {
  TempDir dir;
  const std::string folder = dir / "pets";
  write_classes(folder);
  REQUIRE(open_dataset(folder, options(8)).cache_file.empty());
  const std::string cache = write_cache(folder, options(8));
  REQUIRE(cache == default_cache_path(folder));
  const DataSets beside = open_dataset(folder, options(8));
  REQUIRE(beside.cache_file == cache);
  require_same_sets(open_dataset(folder, folder_only(options(8))), beside);
  // Other options: the folder is read, and the note says why the cache was not.
  const DataSets other = open_dataset(folder, options(10));
  REQUIRE(other.cache_file.empty());
  require_contains(other.cache_note, {cache, "--input", "3x8x8", "3x10x10"});
  // A changed folder: refused, naming the file and the command that rebuilds it.
  data_test::write_png(folder + "/dog/new.png", 5, 5, 3, data_test::make_image(5, 5, 3, pattern(10)));
  require_contains(error_of([&] { open_dataset(folder, options(8)); }),
                   {cache, "stale", "dog/new.png was added", "lockstep cache"});
}

TEST_CASE("cache file: a cut, damaged or foreign file is refused naming it", "[data][data-cache]") {
  const CachedFolder cached;
  const TempDir& dir = cached.dir;
  const std::vector<uint8_t>& whole = cached.bytes;
  const uint64_t meta_offset = le64(whole, 32), labels_offset = le64(whole, 56), pixels_offset = le64(whole, 104);
  const std::string bad = dir / "bad.cache";

  SECTION("cut short") {
    for (size_t size :
         {size_t{0}, size_t{7}, size_t{100}, size_t{127}, size_t{128}, size_t(meta_offset + 20),
          size_t(labels_offset + 2), size_t(pixels_offset), size_t(pixels_offset + 100), whole.size() - 1}) {
      INFO("cut to " << size << " bytes");
      data_test::write_bytes(bad, std::vector<uint8_t>(whole.begin(), whole.begin() + static_cast<long>(size)));
      const std::string message = error_of([&] { open_dataset(bad, options(8)); });
      require_contains(message, {bad});
      INFO(message);
      REQUIRE((message.find("cut short") != std::string::npos || message.find("empty") != std::string::npos));
    }
  }
  SECTION("one bit flipped in the pixels: the sample read is refused") {
    std::vector<uint8_t> flipped = whole;
    flipped[pixels_offset + 8 * 8 * 3 + 5] ^= 0x10;  // sample 1 of the train part
    data_test::write_bytes(bad, flipped);
    const DataSets sets = open_dataset(bad, options(8));
    REQUIRE_NOTHROW(read(*sets.train, 0));
    require_contains(error_of([&] { read(*sets.train, 1); }), {bad, "sample 1", "checksum", "lockstep cache"});
  }
  SECTION("one bit flipped in the metadata, the labels or the header") {
    for (uint64_t at : {meta_offset + 30, labels_offset + 1, uint64_t{40}}) {
      INFO("bit flipped at byte " << at);
      std::vector<uint8_t> flipped = whole;
      flipped[at] ^= 0x01;
      data_test::write_bytes(bad, flipped);
      require_contains(error_of([&] { open_dataset(bad, options(8)); }), {bad, "checksum", "damaged"});
    }
  }
  SECTION("metadata whose checksums agree but that lacks a field") {
    std::vector<uint8_t> edited = whole;
    const uint64_t meta_size = le64(whole, 40);
    std::string meta(whole.begin() + static_cast<long>(meta_offset),
                     whole.begin() + static_cast<long>(meta_offset + meta_size));
    const size_t at = meta.find("\"split_seed\"");
    REQUIRE(at != std::string::npos);
    edited[meta_offset + at + 3] = 'X';  // "spXit_seed": same size, another key
    const auto put32 = [&](size_t offset, uint32_t v) {
      for (int i = 0; i < 4; ++i) edited[offset + i] = static_cast<uint8_t>(v >> (8 * i));
    };
    put32(48, static_cast<uint32_t>(crc32(0, edited.data() + meta_offset, static_cast<uInt>(meta_size))));
    put32(20, 0);
    put32(20, static_cast<uint32_t>(crc32(0, edited.data(), 128)));
    data_test::write_bytes(bad, edited);
    require_contains(error_of([&] { open_dataset(bad, options(8)); }), {bad, "metadata cannot be read", "split_seed"});
  }
  SECTION("a foreign file") {
    data_test::write_bytes(bad, {'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    require_contains(error_of([&] { open_dataset(bad, options(8)); }), {bad, "not a lockstep cache file"});
    require_contains(error_of([&] { open_cache_file(bad, options(8)); }), {bad, "not a lockstep cache file"});
  }
  SECTION("another version") {
    std::vector<uint8_t> other = whole;
    other[16] = 9;
    for (int i = 20; i < 24; ++i) other[i] = 0;
    const uint32_t sum = static_cast<uint32_t>(crc32(0, other.data(), 128));
    for (int i = 0; i < 4; ++i) other[20 + i] = static_cast<uint8_t>(sum >> (8 * i));
    data_test::write_bytes(bad, other);
    require_contains(error_of([&] { open_dataset(bad, options(8)); }), {bad, "version 9", "version 1"});
  }
}

// Reads go through pread on the descriptor opened, never a mapping: a cache
// truncated under a mapped reader killed it with SIGBUS (exit 135, no word).
TEST_CASE("cache file: a file cut or written over while it is read stops the reads naming it", "[data][data-cache]") {
  const CachedFolder cached;
  const std::string& cache = cached.cache;
  const uint64_t pixels_offset = le64(cached.bytes, 104);
  const DataSets sets = open_dataset(cache, options(8));
  const std::vector<float> first = read(*sets.train, 0);

  SECTION("cut short") {
    REQUIRE(::truncate(cache.c_str(), static_cast<off_t>(pixels_offset)) == 0);
    require_contains(error_of([&] { read(*sets.train, 1); }),
                     {cache, "cut short while this run read it", "bytes now", "rename it over the old"});
    require_contains(error_of([&] { read(*sets.train, 0); }), {cache, "cut short"});  // one read before too
  }
  SECTION("another cache of the same size copied into it") {
    std::vector<uint8_t> other = cached.bytes;
    other[pixels_offset] ^= 0x10;
    const int fd = ::open(cache.c_str(), O_WRONLY | O_CLOEXEC);  // in place, as cp writes
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, other.data(), other.size(), 0) == static_cast<ssize_t>(other.size()));
    // A second later, as a copy made after the open would be: the clock's tick is coarser than a test.
    const struct timespec later[2] = {{0, UTIME_OMIT}, {::time(nullptr) + 1, 0}};
    REQUIRE(::futimens(fd, later) == 0);
    ::close(fd);
    require_contains(error_of([&] { read(*sets.train, 0); }),
                     {cache, "changed while this run read it", "modified since it was opened"});
  }
  SECTION("a new cache renamed over it: the file opened is read on, whole") {
    const std::string other = cached.dir / "other.cache";
    data_test::write_bytes(other, std::vector<uint8_t>(64, 7));
    REQUIRE(::rename(other.c_str(), cache.c_str()) == 0);
    REQUIRE(read(*sets.train, 0) == first);
  }
}

TEST_CASE("cache file: a cache of other options is refused naming the difference", "[data][data-cache]") {
  const CachedFolder cached;
  const std::string& cache = cached.cache;
  require_contains(error_of([&] { open_dataset(cache, options(12)); }), {cache, "--input", "3x8x8", "3x12x12"});
  DataOptions grey = options(8);
  grey.channels = 1;
  require_contains(error_of([&] { open_dataset(cache, grey); }), {cache, "1x8x8"});
  DataOptions seed = options(8);
  seed.split_seed = 6;
  require_contains(error_of([&] { open_dataset(cache, seed); }), {cache, "--seed", "seed 5"});
  require_contains(error_of([&] { open_dataset(cache, options(8, 0.2)); }), {cache, "--test-fraction"});
  DataOptions crop = options(8);
  crop.train_center_crop = 1.0;
  require_contains(error_of([&] { open_dataset(cache, crop); }), {cache, "centre crop"});
}

TEST_CASE("cache file: a stale folder is refused naming the file and what changed", "[data][data-cache]") {
  TempDir dir;
  const std::string folder = dir / "pets";
  write_classes(folder);
  CacheWriteOptions w;
  w.output = dir / "pets.cache";
  w.command = "lockstep cache pets --input 3x8x8";
  const std::string cache = write_cache_file(folder, options(8), w).path;
  REQUIRE_NOTHROW(open_dataset(cache, options(8)));
  const auto stale = [&](std::initializer_list<std::string> parts) {
    require_contains(error_of([&] { open_dataset(cache, options(8)); }), parts);
  };
  SECTION("a file added") {
    data_test::write_png(folder + "/eel/z.png", 5, 5, 3, data_test::make_image(5, 5, 3, pattern(11)));
    stale({cache, "stale", "eel/z.png was added", "lockstep cache pets --input 3x8x8"});
  }
  SECTION("a file removed") {
    fs::remove(folder + "/cat/b.jpg");
    stale({cache, "stale", "cat/b.jpg was removed", "lockstep cache pets --input 3x8x8"});
  }
  SECTION("a file rewritten with another size") {
    const auto before = fs::file_size(folder + "/dog/e.png");
    data_test::write_png(folder + "/dog/e.png", 30, 30, 3, data_test::make_image(30, 30, 3, pattern(12)));
    stale({cache, "dog/e.png changed (" + std::to_string(before) + " bytes then, " +
                      std::to_string(fs::file_size(folder + "/dog/e.png")) + " now)"});
  }
  SECTION("a file modified in place (same size, another time)") {
    const std::string file = folder + "/eel/nested/h.jpg";
    fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(3));
    stale({cache, "eel/nested/h.jpg changed (modified since)"});
  }
  SECTION("written again: current") {
    fs::remove(folder + "/cat/b.jpg");
    REQUIRE_THROWS(open_dataset(cache, options(8)));
    write_cache_file(folder, options(8), w);
    require_same_sets(open_dataset(folder, folder_only(options(8))), open_dataset(cache, options(8)));
  }
  SECTION("the folder gone: the cache stands in for it") {
    const DataSets before = open_dataset(folder, folder_only(options(8)));
    std::vector<std::vector<float>> samples;
    for (int64_t i = 0; i < before.train->size(); ++i) samples.push_back(read(*before.train, i));
    fs::rename(folder, dir / "elsewhere");
    const DataSets sets = open_dataset(cache, options(8));
    for (int64_t i = 0; i < before.train->size(); ++i) REQUIRE(read(*sets.train, i) == samples[i]);
  }
}

TEST_CASE("cache file: writers never leave a half-written cache", "[data][data-cache]") {
  const CachedFolder cached;
  const TempDir& dir = cached.dir;
  const std::string &folder = cached.folder, &cache = cached.cache;
  const std::vector<uint8_t>& good = cached.bytes;
  SECTION("a writer killed mid-write leaves its temporary file; the cache stays whole, the next writer removes it") {
    const std::string left = cache + ".tmp.4242";
    data_test::write_bytes(left, std::vector<uint8_t>(good.begin(), good.begin() + 300));
    require_same_sets(open_dataset(folder, folder_only(options(8))), open_dataset(cache, options(8)));
    write_cache(folder, options(8), cache);
    REQUIRE_FALSE(fs::exists(left));
    REQUIRE(bytes_of(cache).size() == good.size());
    REQUIRE_NOTHROW(open_dataset(cache, options(8)));
  }
  SECTION("a second writer while the first holds the lock is refused; the cache stays") {
    const int fd = ::open((cache + ".lock").c_str(), O_RDWR | O_CREAT, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    require_contains(error_of([&] { write_cache(folder, options(10), cache); }),
                     {cache, "another lockstep cache is writing it", ".lock"});
    ::close(fd);
    REQUIRE(bytes_of(cache) == good);
    REQUIRE_NOTHROW(open_dataset(cache, options(8)));
  }
  SECTION("a write that fails mid-way (an image cut short) leaves the old cache and no temporary file") {
    // Its header reads (the folder opens), its pixels do not (decoding fails while writing).
    data_test::write_png(dir / "whole.png", 20, 20, 3, data_test::make_image(20, 20, 3, pattern(13)));
    const std::vector<uint8_t> png = bytes_of(dir / "whole.png");
    fs::remove(dir / "whole.png");
    data_test::write_bytes(folder + "/cat/zz.png", std::vector<uint8_t>(png.begin(), png.begin() + 60));
    DataOptions o = options(8);
    require_contains(error_of([&] { write_cache(folder, o, cache); }), {"cat/zz.png"});
    REQUIRE(bytes_of(cache) == good);
    for (const auto& entry : fs::directory_iterator(dir.path()))
      REQUIRE(entry.path().filename().string().find(".tmp.") == std::string::npos);
  }
}

TEST_CASE("cache file: an IDX folder has nothing to cache", "[data][data-cache]") {
  TempDir dir;
  data_test::write_bytes(dir / "train-images-idx3-ubyte", data_test::idx_images(4, 2, 2, [](auto...) { return 1; }));
  data_test::write_bytes(dir / "train-labels-idx1-ubyte", data_test::idx_labels({0, 1, 0, 1}));
  data_test::write_bytes(dir / "t10k-images-idx3-ubyte", data_test::idx_images(2, 2, 2, [](auto...) { return 1; }));
  data_test::write_bytes(dir / "t10k-labels-idx1-ubyte", data_test::idx_labels({0, 1}));
  require_contains(error_of([&] { write_cache(dir.str(), options(8)); }), {dir.str(), "IDX"});
}
