#include "data/cache_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

#include "base/error.h"
#include "base/folder_sync.h"
#include "base/regular_file.h"
#include "data/image_folder.h"
#include "data/loader_threads.h"

namespace lockstep::data {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr char kMagic[16] = "lockstep-cache\n";  // and a final '\0'
constexpr size_t kHeaderBytes = 128;
constexpr uint64_t kPixelAlign = 4096;

uint32_t crc(const uint8_t* data, size_t size) {
  uLong value = crc32(0L, Z_NULL, 0);
  // zlib takes an unsigned int length: feed a large block in pieces.
  while (size > 0) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    value = crc32(value, data, piece);
    data += piece;
    size -= piece;
  }
  return static_cast<uint32_t>(value);
}

void put_u32(uint8_t* at, uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* at, uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | at[i];
  return v;
}
uint64_t get_u64(const uint8_t* at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | at[i];
  return v;
}

uint64_t round_up(uint64_t value, uint64_t align) { return (value + align - 1) / align * align; }

// Paths and class names are bytes, not always UTF-8, which JSON strings must
// be: such a text is kept as {"hex": "..."} instead, and read back exactly.
json text_json(const std::string& text) {
  try {
    (void)json(text).dump();
    return text;
  } catch (const json::type_error&) {
    static const char* digits = "0123456789abcdef";
    std::string hex;
    for (unsigned char c : text) hex += {digits[c >> 4], digits[c & 15]};
    return json{{"hex", hex}};
  }
}

std::string json_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  const std::string hex = j.at("hex").get<std::string>();
  std::string text;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) text += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return text;
}

// The fixed header, as the comment in cache_file.h lays it out.
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

std::vector<uint8_t> encode_header(const Header& h) {
  std::vector<uint8_t> out(kHeaderBytes, 0);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put_u32(&out[16], h.version);
  put_u64(&out[24], h.file_size);
  const Section* sections[] = {&h.metadata, &h.labels, &h.sums};
  for (int i = 0; i < 3; ++i) {
    put_u64(&out[32 + 24 * i], sections[i]->offset);
    put_u64(&out[40 + 24 * i], sections[i]->size);
    put_u32(&out[48 + 24 * i], sections[i]->crc);
  }
  put_u64(&out[104], h.pixels_offset);
  put_u64(&out[112], h.pixels_size);
  put_u64(&out[120], h.sample_bytes);
  put_u32(&out[20], crc(out.data(), out.size()));
  return out;
}

std::string errno_text() { return std::strerror(errno); }

// ---- the manifest: the image files under a folder, with size and time ----

struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

bool hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

// Every image file the folder loader could list under `dir` (in a sub-folder,
// at any depth, links followed, hidden entries left out), by path relative to
// `root`. A link leading back to a folder on its own path is not followed
// again: the loader refuses such a loop when it opens the folder.
void walk(const fs::path& root, const fs::path& dir, std::vector<std::pair<dev_t, ino_t>>& ancestors,
          std::map<std::string, FileStamp>& out) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::path& path = it->path();
    if (hidden(path)) continue;
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) continue;
    if (S_ISDIR(info.st_mode)) {
      const std::pair<dev_t, ino_t> id{info.st_dev, info.st_ino};
      if (std::find(ancestors.begin(), ancestors.end(), id) != ancestors.end()) continue;
      ancestors.push_back(id);
      walk(root, path, ancestors, out);
      ancestors.pop_back();
    } else if (S_ISREG(info.st_mode) && dir != root && is_image_file_name(path.filename().string())) {
      out[path.lexically_relative(root).string()] =
          FileStamp{static_cast<uint64_t>(info.st_size),
                    static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
    }
  }
}

std::map<std::string, FileStamp> list_folder(const std::string& root) {
  std::map<std::string, FileStamp> out;
  std::vector<std::pair<dev_t, ino_t>> ancestors;
  struct stat info {};
  if (::stat(root.c_str(), &info) == 0) ancestors.push_back({info.st_dev, info.st_ino});
  walk(fs::path(root), fs::path(root), ancestors, out);
  return out;
}

std::string absolute_folder(const std::string& folder) {
  fs::path p = fs::absolute(folder).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.string();
}

// ---- what changes pixels, labels or the split ----

json options_json(const DataOptions& o) {
  return json{{"channels", o.channels},
              {"height", o.height},
              {"width", o.width},
              {"train_center_crop", o.train_center_crop},
              {"test_center_crop", o.test_center_crop},
              {"max_image_pixels", o.max_image_pixels},
              {"skip_bad_images", o.skip_bad_images},
              {"test_fraction", o.test_fraction},
              {"split_seed", o.split_seed}};
}

std::string input_text(int64_t c, int64_t h, int64_t w) {
  return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Where the cache's options differ from the run's in what the samples would
// be, each as "<what>: the cache X, this run Y"; empty when they agree.
std::vector<std::string> option_differences(const json& made, const DataOptions& run, bool split, bool has_test,
                                            int64_t skipped) {
  std::vector<std::string> out;
  const std::string cache_input =
      input_text(made.at("channels").get<int64_t>(), made.at("height").get<int64_t>(), made.at("width").get<int64_t>());
  const std::string run_input = input_text(run.channels, run.height, run.width);
  if (cache_input != run_input)
    out.push_back("--input: the cache holds " + cache_input + " samples, this run asks " + run_input +
                  " (give --input " + cache_input + ")");
  const auto crop = [&](const char* key, double asked, const char* part) {
    const double held = made.at(key).get<double>();
    if (held != asked)
      out.push_back(std::string("the fit of the ") + part + " images (--augment): the cache took a centre crop of " +
                    number(held) + ", this run takes " + number(asked) + " (0: stretched)");
  };
  crop("train_center_crop", run.train_center_crop, "training");
  if (has_test) crop("test_center_crop", run.test_center_crop, "test");
  if (made.at("max_image_pixels").get<int64_t>() != run.max_image_pixels)
    out.push_back("--max-image-pixels: the cache was made with " +
                  std::to_string(made.at("max_image_pixels").get<int64_t>()) + ", this run gives " +
                  std::to_string(run.max_image_pixels));
  if (skipped > 0 && !run.skip_bad_images)
    out.push_back("the cache left out " + std::to_string(skipped) +
                  " bad images (--skip-bad-images), and this run does not skip them");
  if (split) {
    const double fraction = made.at("test_fraction").get<double>();
    if (fraction != run.test_fraction)
      out.push_back("--test-fraction: the cache split off " + number(fraction) + " for testing, this run " +
                    number(run.test_fraction));
    else if (fraction > 0.0 && made.at("split_seed").get<uint64_t>() != run.split_seed)
      out.push_back("--seed: the cache split the folder with seed " +
                    std::to_string(made.at("split_seed").get<uint64_t>()) + ", this run splits with " +
                    std::to_string(run.split_seed));
  }
  return out;
}

std::string joined(const std::vector<std::string>& parts, size_t max_listed = 5) {
  std::string out;
  for (size_t i = 0; i < parts.size() && i < max_listed; ++i) out += (i ? "; " : "") + parts[i];
  if (parts.size() > max_listed) out += "; and " + std::to_string(parts.size() - max_listed) + " more";
  return out;
}

// ---- the open file ----

// A cache file held open while a run reads it. Its header, metadata, labels
// and checksums are read into memory once; each sample's pixels are read with
// pread from the descriptor, never through a memory mapping: a mapped file
// that another program truncates kills the reader with SIGBUS, where a read
// only comes back short. A writer that renames a new cache over the path
// leaves this descriptor on the old file, which stays whole; one that writes
// into the file itself (a truncation, a copy over it) changes its size or
// modification time, which every read compares (`check_unchanged`).
struct OpenCache {
  std::string path;
  int fd = -1;
  uint64_t size = 0;
  struct timespec modified {};
  Header header;
  json meta;
  std::vector<std::string> class_names;
  std::string source, command;
  std::vector<uint8_t> labels, sums;
  // Samples whose checksum has passed. Checked at a sample's first read, not
  // on every read: after the first epoch the reads are this file's whole
  // point, and a CRC-32 of each sample costs far more than its conversion.
  // A sample read once reads the same bytes again while the file's size and
  // modification time stay as they were when it was opened.
  std::unique_ptr<std::atomic<uint8_t>[]> checked;
  ~OpenCache() {
    if (fd >= 0) ::close(fd);
  }
  int32_t label(int64_t sample) const { return static_cast<int32_t>(get_u32(&labels[4 * static_cast<size_t>(sample)])); }
  uint32_t sum(int64_t sample) const { return get_u32(&sums[4 * static_cast<size_t>(sample)]); }

  // Throws, naming the file and what changed, when another program has
  // written into it since it was opened.
  void check_unchanged(const std::string& reading) const {
    struct stat now {};
    LS_CHECK(::fstat(fd, &now) == 0, "cache file ", path, ": cannot read its status while reading ", reading, " (",
             errno_reason(errno), ")");
    const uint64_t now_size = static_cast<uint64_t>(now.st_size);
    LS_CHECK(now_size >= size, "cache file ", path, " was cut short while this run read it (", now_size,
             " bytes now, ", size, " when it was opened): another program truncated it or copied a file over it. ",
             "The checkpoint of the last epoch stays: rebuild the cache with lockstep cache, then --resume. ",
             "To replace a cache a run is reading, write a new one and rename it over the old");
    LS_CHECK(now_size == size && now.st_mtim.tv_sec == modified.tv_sec && now.st_mtim.tv_nsec == modified.tv_nsec,
             "cache file ", path, " changed while this run read it (",
             now_size == size ? "modified since it was opened"
                              : std::to_string(now_size) + " bytes now, " + std::to_string(size) + " when it was opened",
             "): another program wrote into it or copied a file over it. The checkpoint of the last epoch stays: ",
             "rebuild the cache with lockstep cache, then --resume. To replace a cache a run is reading, write a new one "
             "and rename it over the old");
  }

  // `count` bytes at `offset`, or the error of a file that changed.
  void read_at(uint8_t* out, size_t count, uint64_t offset, const std::string& reading) const {
    size_t filled = 0;
    while (filled < count) {
      const ssize_t got = ::pread(fd, out + filled, count - filled, static_cast<off_t>(offset + filled));
      if (got < 0 && errno == EINTR) continue;
      LS_CHECK(got >= 0, "cache file ", path, ": cannot read ", reading, " (", errno_reason(errno), ")");
      if (got == 0) break;
      filled += static_cast<size_t>(got);
    }
    check_unchanged(reading);
    LS_CHECK(filled == count, "cache file ", path, ": ", reading, " lies past its end (damaged)");
  }
};

class CacheFileDataset final : public Dataset {
public:
  CacheFileDataset(std::shared_ptr<const OpenCache> map, int64_t first, int64_t count, Shape shape, std::string part)
      : map_(std::move(map)), first_(first), count_(count), shape_(shape), part_(std::move(part)) {}

  int64_t size() const override { return count_; }
  Shape sample_shape() const override { return shape_; }
  int64_t num_classes() const override { return static_cast<int64_t>(map_->class_names.size()); }
  const std::vector<std::string>& class_names() const override { return map_->class_names; }
  int32_t label(int64_t index) const override { return map_->label(first_ + index); }
  void read_pixels(int64_t index, uint8_t* out) const override {
    const int64_t sample = first_ + index;
    const OpenCache& file = *map_;
    const uint64_t n = file.header.sample_bytes;
    file.read_at(out, static_cast<size_t>(n), file.header.pixels_offset + static_cast<uint64_t>(sample) * n,
                 "the pixels of sample " + std::to_string(sample));
    std::atomic<uint8_t>& checked = file.checked[sample];
    if (!checked.load(std::memory_order_acquire)) {
      LS_CHECK(crc(out, static_cast<size_t>(n)) == file.sum(sample), "cache file ", file.path,
               ": the pixels of sample ", sample, " (", sample_name(index),
               ") fail their checksum: the file is damaged; rebuild it: ", file.command);
      checked.store(1, std::memory_order_release);
    }
  }
  // Reads are cheap, yet the folder loader's normalisation samples the set
  // as for a folder read from disk: said alike so the statistics are equal.
  bool in_memory() const override { return false; }
  std::string source() const override { return "cache file " + map_->path + " (" + part_ + ")"; }
  std::string sample_name(int64_t index) const override {
    const json& files = map_->meta.at("files");
    const size_t file = map_->meta.at("sample_files").at(static_cast<size_t>(first_ + index)).get<size_t>();
    return (fs::path(map_->source) / json_text(files.at(file).at(0))).string();
  }

private:
  std::shared_ptr<const OpenCache> map_;
  int64_t first_, count_;
  Shape shape_;
  std::string part_;
};

std::shared_ptr<OpenCache> open_cache(const std::string& path) {
  const std::string rebuild = "; rebuild it with lockstep cache";
  auto m = std::make_shared<OpenCache>();
  m->path = path;
  uint64_t size = 0;
  m->fd = open_regular_file(path, "cache file", size);  // a FIFO or a device is refused, not waited on
  const int fd = m->fd;
  struct stat info {};
  LS_CHECK(::fstat(fd, &info) == 0, "cache file ", path, ": cannot read (", errno_text(), ")");
  m->size = size;
  m->modified = info.st_mtim;
  uint8_t head[kHeaderBytes] = {};
  const ssize_t got = ::pread(fd, head, kHeaderBytes, 0);
  LS_CHECK(got >= 0, "cache file ", path, ": cannot read (", errno_text(), ")");
  LS_CHECK(got > 0, "cache file ", path, ": empty (0 bytes): not a lockstep cache file, or one cut short to nothing",
           rebuild);
  const size_t magic_seen = std::min<size_t>(static_cast<size_t>(got), sizeof kMagic);
  LS_CHECK(std::memcmp(head, kMagic, magic_seen) == 0, "cache file ", path,
           ": not a lockstep cache file (it does not begin with \"lockstep-cache\"); make one with lockstep cache");
  LS_CHECK(static_cast<size_t>(got) == kHeaderBytes, "cache file ", path, ": cut short: ", got,
           " bytes, less than its ", kHeaderBytes, "-byte header", rebuild);
  Header& h = m->header;
  h.version = get_u32(head + 16);
  LS_CHECK(h.version == kCacheFileVersion, "cache file ", path, ": format version ", h.version,
           ", and this lockstep reads version ", kCacheFileVersion, rebuild);
  const uint32_t header_sum = get_u32(head + 20);
  put_u32(head + 20, 0);
  LS_CHECK(crc(head, kHeaderBytes) == header_sum, "cache file ", path, ": its header fails its checksum (damaged)",
           rebuild);
  h.file_size = get_u64(head + 24);
  LS_CHECK(size == h.file_size, "cache file ", path, ": ",
           size < h.file_size ? "cut short: " : "longer than written: ", size, " bytes, its header says ", h.file_size,
           rebuild);
  Section* sections[] = {&h.metadata, &h.labels, &h.sums};
  const char* names[] = {"metadata", "labels", "sample checksums"};
  for (int i = 0; i < 3; ++i) {
    sections[i]->offset = get_u64(head + 32 + 24 * i);
    sections[i]->size = get_u64(head + 40 + 24 * i);
    sections[i]->crc = get_u32(head + 48 + 24 * i);
    LS_CHECK(sections[i]->offset >= kHeaderBytes && sections[i]->offset <= size &&
                 sections[i]->size <= size - sections[i]->offset,
             "cache file ", path, ": its ", names[i], " lie outside the file (damaged)", rebuild);
  }
  h.pixels_offset = get_u64(head + 104);
  h.pixels_size = get_u64(head + 112);
  h.sample_bytes = get_u64(head + 120);
  LS_CHECK(h.pixels_offset <= size && h.pixels_size <= size - h.pixels_offset && h.sample_bytes > 0 &&
               h.pixels_size % h.sample_bytes == 0 && h.labels.size == h.pixels_size / h.sample_bytes * 4 &&
               h.sums.size == h.labels.size && h.labels.offset % 4 == 0 && h.sums.offset % 4 == 0,
           "cache file ", path, ": its sections do not agree (damaged)", rebuild);
  std::vector<uint8_t> metadata;
  std::vector<uint8_t>* held[] = {&metadata, &m->labels, &m->sums};
  for (int i = 0; i < 3; ++i) {
    held[i]->resize(static_cast<size_t>(sections[i]->size));
    m->read_at(held[i]->data(), held[i]->size(), sections[i]->offset, std::string("its ") + names[i]);
    LS_CHECK(crc(held[i]->data(), held[i]->size()) == sections[i]->crc, "cache file ", path, ": its ", names[i],
             " fail their checksum (damaged)", rebuild);
  }
  const int64_t samples = static_cast<int64_t>(h.labels.size / 4);
  m->checked = std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(samples));
  try {
    m->meta = json::parse(metadata.begin(), metadata.end());
    const json& meta = m->meta;
    for (const json& name : meta.at("class_names")) m->class_names.push_back(json_text(name));
    m->source = json_text(meta.at("source"));
    m->command = json_text(meta.at("command"));
    const auto input = meta.at("input").get<std::vector<int64_t>>();
    LS_CHECK(input.size() == 3 && input[0] > 0 && input[1] > 0 && input[2] > 0 &&
                 static_cast<uint64_t>(input[0] * input[1] * input[2]) == h.sample_bytes,
             "cache file ", path, ": its input size disagrees with its samples (damaged)", rebuild);
    LS_CHECK(meta.at("train").get<int64_t>() + meta.at("test").get<int64_t>() == samples &&
                 meta.at("sample_files").size() == static_cast<size_t>(samples) && !m->class_names.empty(),
             "cache file ", path, ": its metadata disagrees with its samples (damaged)", rebuild);
    const size_t files = meta.at("files").size();
    for (const json& f : meta.at("sample_files"))
      LS_CHECK(f.get<size_t>() < files, "cache file ", path, ": a sample names no file of its manifest (damaged)",
               rebuild);
    // Every field read later, read once here: a malformed one is told now, as damage.
    for (const json& f : meta.at("files"))
      (void)json_text(f.at(0)), (void)f.at(1).get<uint64_t>(), (void)f.at(2).get<int64_t>();
    for (const json& bad : meta.at("skipped")) (void)json_text(bad.at(0)), (void)json_text(bad.at(1));
    (void)meta.at("split").get<bool>();
    const json& made = meta.at("options");
    for (const char* key : {"channels", "height", "width", "max_image_pixels"}) (void)made.at(key).get<int64_t>();
    for (const char* key : {"train_center_crop", "test_center_crop", "test_fraction"}) (void)made.at(key).get<double>();
    (void)made.at("split_seed").get<uint64_t>();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // nlohmann's, and std::stoi's for a hex text
    LS_FAIL("cache file ", path, ": its metadata cannot be read (", e.what(), ")", rebuild);
  }
  for (int64_t i = 0; i < samples; ++i)
    LS_CHECK(m->label(i) >= 0 && m->label(i) < static_cast<int32_t>(m->class_names.size()), "cache file ", path,
             ": sample ", i, " has label ", m->label(i), ", outside its ", m->class_names.size(), " classes (damaged)",
             rebuild);
  return m;
}

// The changes of the folder since the cache was written, each naming the
// file; empty when there are none, or when the folder is not there (the
// cache then stands in for it).
std::vector<std::string> folder_changes(const OpenCache& m) {
  std::error_code ec;
  if (!fs::is_directory(m.source, ec)) return {};
  std::map<std::string, FileStamp> now = list_folder(m.source);
  std::vector<std::string> changes;
  for (const json& f : m.meta.at("files")) {
    const std::string rel = json_text(f.at(0));
    const auto it = now.find(rel);
    if (it == now.end()) {
      changes.push_back(rel + " was removed");
      continue;
    }
    const uint64_t size = f.at(1).get<uint64_t>();
    if (it->second.size != size)
      changes.push_back(rel + " changed (" + std::to_string(size) + " bytes then, " + std::to_string(it->second.size) +
                        " now)");
    else if (it->second.mtime_ns != f.at(2).get<int64_t>())
      changes.push_back(rel + " changed (modified since)");
    now.erase(it);
  }
  for (const auto& [rel, s] : now) changes.push_back(rel + " was added");
  return changes;
}

DataSets make_sets(const std::shared_ptr<OpenCache>& m) {
  const json& meta = m->meta;
  const auto input = meta.at("input").get<std::vector<int64_t>>();
  const Shape shape{input[0], input[1], input[2]};
  const int64_t train = meta.at("train").get<int64_t>(), test = meta.at("test").get<int64_t>();
  DataSets sets;
  sets.format = DataFormat::image_folder;
  sets.split = meta.at("split").get<bool>();
  sets.cache_file = m->path;
  sets.train = std::make_shared<CacheFileDataset>(m, 0, train, shape, "train");
  if (test > 0) sets.test = std::make_shared<CacheFileDataset>(m, train, test, shape, "test");
  for (const json& bad : meta.at("skipped")) sets.skipped.add(json_text(bad.at(0)), json_text(bad.at(1)));
  return sets;
}

// ---- writing ----

void pwrite_all(int fd, const uint8_t* data, size_t size, uint64_t offset, const std::string& path) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    LS_CHECK(n > 0, "cache file ", path, ": write failed (", errno_text(), ")");
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

// `size` bytes at `from` copied to `to` in the same file, in chunks taken
// from the end when they move towards it: no byte is written over before it
// is read.
void move_in_file(int fd, uint64_t from, uint64_t to, uint64_t size, const std::string& path) {
  std::vector<uint8_t> chunk(size_t{1} << 20);
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = std::min<uint64_t>(chunk.size(), size - done);
    const uint64_t at = to > from ? size - done - n : done;
    for (uint64_t got = 0; got < n;) {
      const ssize_t r = ::pread(fd, chunk.data() + got, n - got, static_cast<off_t>(from + at + got));
      if (r < 0 && errno == EINTR) continue;
      LS_CHECK(r > 0, "cache file ", path, ": cannot read back its pixels (", r < 0 ? errno_text() : "cut short", ")");
      got += static_cast<uint64_t>(r);
    }
    pwrite_all(fd, chunk.data(), n, to + at, path);
    done += n;
  }
}

// An exclusive flock on FILE.lock, held while the cache is written: a second
// writer of the same cache is refused rather than racing the first.
class WriterLock {
public:
  explicit WriterLock(const std::string& output) : path_(output + ".lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    LS_CHECK(fd_ >= 0, "cache file ", output, ": cannot create its lock file ", path_, " (", errno_text(), ")");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd_);
      LS_CHECK(err != EWOULDBLOCK, "cache file ", output, ": another lockstep cache is writing it (it holds ", path_,
               "); wait for it to finish");
      LS_FAIL("cache file ", output, ": cannot lock ", path_, " (", std::strerror(err), ")");
    }
  }
  ~WriterLock() { ::close(fd_); }  // releases the lock; the file stays for the next writer
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

private:
  std::string path_;
  int fd_ = -1;
};

// The temporary files of writers that died mid-write (FILE.tmp.<pid>): with
// the lock held no other writer is at work, so they are leftovers.
void remove_leftovers(const std::string& output) {
  const fs::path out(output);
  const std::string prefix = out.filename().string() + ".tmp.";
  std::error_code ec;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(out.parent_path().empty() ? "." : out.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        name.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
      fs::remove(entry.path(), ec);
  }
}

struct PartToWrite {
  std::shared_ptr<const Dataset> data;
  double center_crop = 0.0;
};

}  // namespace

std::string default_cache_path(const std::string& folder) { return absolute_folder(folder) + kCacheFileSuffix; }

std::string cache_command(const std::string& folder, const DataOptions& o, bool split, const std::string& output) {
  std::ostringstream out;
  out << "lockstep cache " << folder << " --input " << input_text(o.channels, o.height, o.width);
  if (o.train_center_crop != 0.0 || o.test_center_crop != 0.0) out << " --augment random-resized-crop";
  if (split) out << " --test-fraction " << number(o.test_fraction) << " --seed " << o.split_seed;
  if (o.skip_bad_images) out << " --skip-bad-images";
  if (o.max_image_pixels != kDefaultMaxImagePixels) out << " --max-image-pixels " << o.max_image_pixels;
  if (!output.empty() && output != default_cache_path(folder)) out << " -o " << output;
  return out.str();
}

bool is_cache_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO swapped in is not waited on
  if (fd < 0) return false;
  char head[sizeof kMagic] = {};
  const ssize_t got = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  return got >= 0 && std::memcmp(head, kMagic, static_cast<size_t>(got)) == 0;
}

CacheWriteSummary write_cache_file(const std::string& folder, const DataOptions& options,
                                   const CacheWriteOptions& write) {
  const std::string output = write.output.empty() ? default_cache_path(folder) : write.output;
  LS_CHECK(!is_cache_file(folder), "lockstep cache: ", folder,
           " is a cache file already; give the image folder it was made from");
  DataOptions plain = options;
  plain.cache_images = false;
  plain.cache_budget_bytes = 0;
  plain.use_cache_file = false;  // the folder itself, not an older cache of it
  const DataSets sets = open_dataset(folder, plain);
  LS_CHECK(sets.format == DataFormat::image_folder, "lockstep cache: ", folder, " holds ", format_name(sets.format),
           " data, stored decoded already: train from it directly");
  const std::string source = absolute_folder(folder);
  const std::map<std::string, FileStamp> listed = list_folder(source);
  json files = json::array();
  std::map<std::string, size_t> file_index;
  for (const auto& [rel, s] : listed) {
    file_index[rel] = files.size();
    files.push_back(json::array({text_json(rel), s.size, s.mtime_ns}));
  }
  const std::vector<PartToWrite> parts = {{sets.train, options.train_center_crop},
                                          {sets.test, options.test_center_crop}};
  const Shape shape = sets.train->sample_shape();
  const uint64_t sample_bytes = static_cast<uint64_t>(shape.numel());
  std::vector<std::string> paths;
  std::vector<double> crops;
  std::vector<uint8_t> labels;
  json sample_files = json::array();
  for (const PartToWrite& part : parts) {
    if (!part.data) continue;
    for (int64_t i = 0; i < part.data->size(); ++i) {
      const std::string path = part.data->sample_name(i);
      const std::string rel = fs::absolute(path).lexically_normal().lexically_relative(source).string();
      const auto it = file_index.find(rel);
      LS_CHECK(it != file_index.end(), "lockstep cache: ", path, " is not under ", folder,
               " as listed (it changed while being read); run again");
      sample_files.push_back(it->second);
      paths.push_back(path);
      crops.push_back(part.center_crop);
      labels.resize(labels.size() + 4);
      put_u32(&labels[labels.size() - 4], static_cast<uint32_t>(part.data->label(i)));
    }
  }
  const int64_t samples = static_cast<int64_t>(paths.size());
  const std::string command =
      write.command.empty() ? cache_command(source, options, sets.split, output) : write.command;
  json class_names = json::array();
  for (const std::string& name : sets.train->class_names()) class_names.push_back(text_json(name));
  // Images whose decoding fails under --skip-bad-images are left out (`kept`
  // 0) and told with those the folder's check left out: the layout below is
  // made from the samples kept, once all are decoded.
  std::vector<uint8_t> kept(static_cast<size_t>(samples), 1);
  BadFiles skipped = sets.skipped;
  int64_t train_count = sets.train->size();
  std::string meta_text;
  std::vector<uint8_t> kept_labels;
  const auto lay_out = [&]() {
    json kept_files = json::array();
    kept_labels.clear();
    int64_t kept_samples = 0;
    train_count = 0;
    for (int64_t i = 0; i < samples; ++i) {
      if (!kept[static_cast<size_t>(i)]) continue;
      kept_files.push_back(sample_files[static_cast<size_t>(i)]);
      kept_labels.insert(kept_labels.end(), &labels[4 * i], &labels[4 * i] + 4);
      ++kept_samples;
      if (i < sets.train->size()) ++train_count;
    }
    json skipped_json = json::array();
    for (const BadFile& bad : skipped.files)
      skipped_json.push_back(json::array({text_json(bad.path), text_json(bad.message)}));
    meta_text = json{{"format", "lockstep decoded-image cache"},
                     {"input", {shape[0], shape[1], shape[2]}},
                     {"options", options_json(options)},
                     {"source", text_json(source)},
                     {"class_names", class_names},
                     {"split", sets.split},
                     {"train", train_count},
                     {"test", kept_samples - train_count},
                     {"files", files},
                     {"sample_files", kept_files},
                     {"command", text_json(command)},
                     {"skipped", skipped_json}}
                    .dump();
    Header h;
    h.metadata = {kHeaderBytes, meta_text.size(),
                  crc(reinterpret_cast<const uint8_t*>(meta_text.data()), meta_text.size())};
    h.labels = {round_up(h.metadata.offset + h.metadata.size, 8), kept_labels.size(),
                crc(kept_labels.data(), kept_labels.size())};
    h.sums = {h.labels.offset + h.labels.size, kept_labels.size(), 0};
    h.pixels_offset = round_up(h.sums.offset + h.sums.size, kPixelAlign);
    h.sample_bytes = sample_bytes;
    h.pixels_size = sample_bytes * static_cast<uint64_t>(kept_samples);
    h.file_size = h.pixels_offset + h.pixels_size;
    return h;
  };
  const uint64_t pixels_at = lay_out().pixels_offset;  // where the pixels go while they are decoded

  const fs::path out_path(output);
  std::error_code ec;
  LS_CHECK(!fs::is_directory(out_path, ec), "cache file ", output, ": is a folder; give a file name with -o");
  WriterLock lock(output);
  remove_leftovers(output);
  const std::string temp = output + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  LS_CHECK(fd >= 0, "cache file ", output, ": cannot create ", temp, " (", errno_text(), ")");
  // Whatever stops the writing removes the temporary file: the old cache stays.
  struct TempFile {
    int fd;
    std::string path;
    bool done = false;
    ~TempFile() {
      if (fd >= 0) ::close(fd);
      if (!done) ::unlink(path.c_str());
    }
  } guard{fd, temp};

  std::vector<uint8_t> sums;
  const int threads = std::max(1, write.threads);
  check_loader_threads(threads, "lockstep cache: decoding threads");
  const int64_t batch = std::max<int64_t>(64, 16 * threads);
  std::vector<uint8_t> pixels;
  uint64_t written = 0;  // samples whose pixels are in the file
  for (int64_t first = 0; first < samples; first += batch) {
    const int64_t count = std::min(batch, samples - first);
    pixels.assign(static_cast<size_t>(count) * sample_bytes, 0);
    std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
    std::vector<std::string> failures(static_cast<size_t>(count));
    try {
      // jthreads: when one cannot start, those started are joined as the
      // vector goes and the error is told (a joinable std::thread would end
      // the process in std::terminate).
      std::vector<std::jthread> workers;
      for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
          try {
            for (int64_t i = t; i < count; i += threads) {
              try {
                decode_image(paths[first + i], shape[0], shape[1], shape[2], &pixels[i * sample_bytes],
                             options.max_image_pixels, crops[first + i]);
              } catch (const Error& e) {
                if (!options.skip_bad_images) throw;
                failures[static_cast<size_t>(i)] = e.what();
              }
            }
          } catch (...) {
            errors[t] = std::current_exception();
          }
        });
    } catch (const std::system_error& e) {
      LS_FAIL("lockstep cache: cannot start ", threads, " decoding threads (", e.what(), "); give fewer --threads");
    }
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    // The kept samples of the batch, one after the other.
    uint64_t batch_kept = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (!failures[static_cast<size_t>(i)].empty()) {
        kept[static_cast<size_t>(first + i)] = 0;
        skipped.add(paths[first + i], failures[static_cast<size_t>(i)]);
        continue;
      }
      if (batch_kept != static_cast<uint64_t>(i))
        std::memmove(&pixels[batch_kept * sample_bytes], &pixels[i * sample_bytes], sample_bytes);
      sums.resize(sums.size() + 4);
      put_u32(&sums[sums.size() - 4], crc(&pixels[batch_kept * sample_bytes], sample_bytes));
      ++batch_kept;
    }
    pwrite_all(fd, pixels.data(), batch_kept * sample_bytes, pixels_at + written * sample_bytes, temp);
    written += batch_kept;
    if (write.progress) write.progress(first + count, samples);
  }
  LS_CHECK(written > 0, "lockstep cache: no image of ", folder, " could be decoded (", skipped.summary(), ")");
  Header h = lay_out();
  if (h.pixels_offset != pixels_at) {
    // Images left out changed the metadata's size: the pixels move to where the final layout puts them.
    move_in_file(fd, pixels_at, h.pixels_offset, h.pixels_size, temp);
    LS_CHECK(::ftruncate(fd, static_cast<off_t>(h.file_size)) == 0, "cache file ", output, ": cannot cut ", temp,
             " to its size (", errno_text(), ")");
  }
  h.sums.crc = crc(sums.data(), sums.size());
  std::vector<uint8_t> start(h.pixels_offset, 0);  // header, metadata, labels, sums
  const std::vector<uint8_t> header = encode_header(h);
  std::memcpy(start.data(), header.data(), header.size());
  std::memcpy(&start[h.metadata.offset], meta_text.data(), meta_text.size());
  std::memcpy(&start[h.labels.offset], kept_labels.data(), kept_labels.size());
  std::memcpy(&start[h.sums.offset], sums.data(), sums.size());
  pwrite_all(fd, start.data(), start.size(), 0, temp);
  LS_CHECK(::fsync(fd) == 0, "cache file ", output, ": cannot flush ", temp, " to disk (", errno_text(), ")");
  LS_CHECK(::close(fd) == 0, "cache file ", output, ": cannot close ", temp, " (", errno_text(), ")");
  guard.fd = -1;
  LS_CHECK(::rename(temp.c_str(), output.c_str()) == 0, "cache file ", output, ": cannot rename ", temp, " over it (",
           errno_text(), ")");
  guard.done = true;
  sync_folder_of(output);  // the rename survives a crash once the folder is flushed too
  CacheWriteSummary summary;
  summary.path = output;
  summary.samples = static_cast<int64_t>(written);
  summary.train = train_count;
  summary.test = summary.samples - train_count;
  summary.bytes = static_cast<int64_t>(h.file_size);
  summary.skipped = skipped;
  return summary;
}

CacheMadeWith read_cache_options(const std::string& path) {
  const std::shared_ptr<OpenCache> m = open_cache(path);
  const json& made = m->meta.at("options");
  CacheMadeWith out;
  out.channels = made.at("channels").get<int64_t>();
  out.height = made.at("height").get<int64_t>();
  out.width = made.at("width").get<int64_t>();
  out.split = m->meta.at("split").get<bool>();
  out.test_fraction = made.at("test_fraction").get<double>();
  out.max_image_pixels = made.at("max_image_pixels").get<int64_t>();
  return out;
}

DataSets open_cache_file(const std::string& path, const DataOptions& options) {
  const std::shared_ptr<OpenCache> m = open_cache(path);
  const bool has_test = m->meta.at("test").get<int64_t>() > 0;
  const std::vector<std::string> differ =
      option_differences(m->meta.at("options"), options, m->meta.at("split").get<bool>(), has_test,
                         static_cast<int64_t>(m->meta.at("skipped").size()));
  LS_CHECK(differ.empty(), "cache file ", path, " was made with other options than this run's: ", joined(differ),
           "; give this run the cache's options, or make the cache again with this run's: ",
           cache_command(m->source, options, m->meta.at("split").get<bool>(), path));
  const std::vector<std::string> changes = folder_changes(*m);
  LS_CHECK(changes.empty(), "cache file ", path, " is stale: its folder ", m->source, " changed since it was written (",
           joined(changes), "); rebuild it: ", m->command);
  return make_sets(m);
}

std::optional<DataSets> open_cache_beside(const std::string& folder, const DataOptions& options, std::string& note) {
  const std::string path = default_cache_path(folder);
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return std::nullopt;
  // A FIFO, a device or a dangling link of that name is not read (a FIFO would block), nor passed over.
  const std::string not_a_file = not_a_file_reason(path);
  LS_CHECK(not_a_file.empty(), "cache file ", path, " (found beside ", folder, ") ", not_a_file,
           ": remove it to read the folder (or make a cache there with lockstep cache)");
  const std::shared_ptr<OpenCache> m = open_cache(path);
  const bool has_test = m->meta.at("test").get<int64_t>() > 0;
  const std::vector<std::string> differ =
      option_differences(m->meta.at("options"), options, m->meta.at("split").get<bool>(), has_test,
                         static_cast<int64_t>(m->meta.at("skipped").size()));
  if (!differ.empty()) {
    note = "the cache file " + path + " beside the data holds other samples (" + joined(differ) +
           "): reading the folder instead";
    return std::nullopt;
  }
  const std::vector<std::string> changes = folder_changes(*m);
  LS_CHECK(changes.empty(), "cache file ", path, " (found beside ", folder,
           ") is stale: the folder changed since it "
           "was written (",
           joined(changes), "); rebuild it: ", m->command, "; or remove it to read the folder");
  return make_sets(m);
}

}  // namespace lockstep::data
