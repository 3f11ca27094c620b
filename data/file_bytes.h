#pragma once
// Whole-file reads: the binary formats, gzip-compressed or not, and the many
// small files of an image folder. Only regular files are read, and no more
// than a bound: a FIFO would block, /dev/zero never ends, a gzip bomb inflates
// without end.
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::data {

// The most bytes a data file may hold (or inflate to): 16 GiB, more than any
// file of the data sets lockstep reads, less than a bomb needs.
inline constexpr uint64_t kMaxFileBytes = uint64_t{16} << 30;

// A regular file read from start to end, inflated when it is gzip-compressed
// (zlib reads plain files unchanged), in chunks: a reader decides from a
// header how much to read. Throws lockstep::Error naming the file (`what` its
// role, "IDX file") when it is missing, not a regular file (a folder, a FIFO,
// a device: named as such), unreadable, or its gzip stream is damaged.
class FileReader {
public:
  FileReader(const std::string& path, const std::string& what);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Up to `size` bytes into `out`; fewer only at the end of the data.
  size_t read(uint8_t* out, size_t size);
  // True when nothing is left (reads one byte ahead to know, and gives it back via the next read).
  bool at_end();
  uint64_t size_on_disk() const { return size_on_disk_; }
  const std::string& path() const { return path_; }
  const std::string& what() const { return what_; }

private:
  std::string path_, what_;
  void* gz_ = nullptr;  // gzFile
  uint64_t size_on_disk_ = 0;
  int peeked_ = -1;
};

// The bytes of `path`, inflated when it is gzip-compressed. Throws as
// FileReader does, and when there are more than `max_bytes` of them.
std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what,
                                     uint64_t max_bytes = kMaxFileBytes);

// The bytes of `path` as they are (no gzip), into `bytes`, whose capacity is
// reused: zlib's buffers would cost more than a small image's decode. Throws
// lockstep::Error naming the file (`what` its role) when it cannot be read, is
// not a regular file, or holds more than `max_bytes`.
void read_plain_file(const std::string& path, std::vector<uint8_t>& bytes, const std::string& what,
                     uint64_t max_bytes = kMaxFileBytes);

// True when `path` exists and is a regular file (following links).
bool is_file(const std::string& path);

}  // namespace lockstep::data
