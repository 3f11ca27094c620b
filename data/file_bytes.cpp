#include "data/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>

#include "base/error.h"
#include "base/regular_file.h"

namespace lockstep::data {
namespace {

std::string size_text(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

FileReader::FileReader(const std::string& path, const std::string& what) : path_(path), what_(what) {
  const int fd = open_regular_file(path, what, size_on_disk_);
  gzFile file = gzdopen(fd, "rb");
  if (file == nullptr) {
    ::close(fd);
    LS_FAIL(what, " ", path, ": cannot open (out of memory for zlib's buffers)");
  }
  gzbuffer(file, 1 << 18);
  gz_ = file;
}

FileReader::~FileReader() { gzclose(static_cast<gzFile>(gz_)); }

size_t FileReader::read(uint8_t* out, size_t size) {
  gzFile file = static_cast<gzFile>(gz_);
  size_t filled = 0;
  if (size > 0 && peeked_ >= 0) {
    out[filled++] = static_cast<uint8_t>(peeked_);
    peeked_ = -1;
  }
  while (filled < size) {
    const size_t want = std::min<size_t>(size - filled, 1u << 30);
    const int got = gzread(file, out + filled, static_cast<unsigned>(want));
    if (got <= 0) {
      int status = Z_OK;
      const char* message = gzerror(file, &status);
      LS_CHECK(status == Z_OK || status == Z_STREAM_END, what_, " ", path_,
               ": the gzip stream is damaged or truncated (zlib: ", message ? message : "", ")");
      break;
    }
    filled += static_cast<size_t>(got);
  }
  return filled;
}

bool FileReader::at_end() {
  if (peeked_ >= 0) return false;
  uint8_t byte = 0;
  if (read(&byte, 1) == 0) return true;
  peeked_ = byte;
  return false;
}

std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what, uint64_t max_bytes) {
  FileReader reader(path, what);
  // Start from the file size: exact for plain files, a lower bound for gzip.
  std::vector<uint8_t> bytes;
  size_t filled = 0;
  size_t capacity = static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(reader.size_on_disk(), 1 << 16), max_bytes + 1));
  for (;;) {
    bytes.resize(capacity);
    filled += reader.read(bytes.data() + filled, capacity - filled);
    if (filled < capacity) break;
    LS_CHECK(filled <= max_bytes, what, " ", path, ": holds more than ", size_text(max_bytes),
             reader.size_on_disk() < filled ? " once inflated" : "", " (the limit for a data file)");
    capacity = static_cast<size_t>(std::min<uint64_t>(uint64_t{capacity} * 2, max_bytes + 1));
  }
  bytes.resize(filled);
  bytes.shrink_to_fit();
  return bytes;
}

void read_plain_file(const std::string& path, std::vector<uint8_t>& bytes, const std::string& what,
                     uint64_t max_bytes) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, what, size);
  if (size > max_bytes) {
    ::close(fd);
    LS_FAIL(what, " ", path, ": ", size_text(size), ", more than the limit of ", size_text(max_bytes));
  }
  // One byte beyond the size, so a file that grew since is still read to its end.
  bytes.resize(static_cast<size_t>(size) + 1);
  size_t filled = 0;
  for (;;) {
    if (filled == bytes.size()) {
      if (filled > max_bytes) {
        ::close(fd);
        LS_FAIL(what, " ", path, ": grew past the limit of ", size_text(max_bytes), " while it was read");
      }
      bytes.resize(static_cast<size_t>(std::min<uint64_t>(uint64_t{filled} * 2, max_bytes + 1)));
    }
    const ssize_t got = ::read(fd, bytes.data() + filled, bytes.size() - filled);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      const std::string why = errno_reason(errno);
      ::close(fd);
      LS_FAIL(what, " ", path, ": cannot read (", why, ")");
    }
    filled += static_cast<size_t>(got);
  }
  ::close(fd);
  bytes.resize(filled);
}

bool is_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

}  // namespace lockstep::data
