#include "data/cache_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>

#include "base/error.h"
#include "base/folder_sync.h"
#include "data/image_folder.h"
#include "data/loader_threads.h"
#include "data/open_dataset.h"

namespace lockstep::data {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace cache_format;

namespace {

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

}  // namespace lockstep::data
