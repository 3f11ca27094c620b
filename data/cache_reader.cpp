#include "data/cache_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>

#include "base/error.h"
#include "base/regular_file.h"

namespace lockstep::data {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace cache_format;

namespace {

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

}  // namespace

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
