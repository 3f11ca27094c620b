#include "data/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "base/error.h"

namespace lockstep::data {

std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  LS_CHECK(fs::exists(path, ec), what, " ", path, ": no such file");
  LS_CHECK(!fs::is_directory(path, ec), what, " ", path, ": is a folder, not a file");
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");
  LS_CHECK(file != nullptr, what, " ", path, ": cannot open (", errno ? std::strerror(errno) : "out of memory", ")");
  gzbuffer(file, 1 << 18);
  // Start from the file size: exact for plain files, a lower bound for gzip.
  uintmax_t on_disk = fs::file_size(path, ec);
  if (ec) on_disk = 0;
  std::vector<uint8_t> bytes(std::max<size_t>(static_cast<size_t>(on_disk), 1 << 16));
  size_t filled = 0;
  for (;;) {
    if (filled == bytes.size()) bytes.resize(bytes.size() * 2);
    const size_t want = std::min<size_t>(bytes.size() - filled, 1u << 30);
    const int got = gzread(file, bytes.data() + filled, static_cast<unsigned>(want));
    if (got <= 0) break;
    filled += static_cast<size_t>(got);
  }
  int status = Z_OK;
  const char* message = gzerror(file, &status);
  const std::string reason = message ? message : "";
  gzclose(file);
  LS_CHECK(status == Z_OK || status == Z_STREAM_END, what, " ", path,
           ": the gzip stream is damaged or truncated (zlib: ", reason, ")");
  bytes.resize(filled);
  bytes.shrink_to_fit();
  return bytes;
}

void read_plain_file(const std::string& path, std::vector<uint8_t>& bytes, const std::string& what) {
  // errno through error_code: strerror is not thread-safe, and loader threads read side by side.
  auto reason = [] { return std::error_code(errno, std::generic_category()).message(); };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  LS_CHECK(fd >= 0, what, " ", path, ": cannot open (", reason(), ")");
  struct stat info {};
  const size_t expected = ::fstat(fd, &info) == 0 && info.st_size > 0 ? static_cast<size_t>(info.st_size) : 0;
  // One byte beyond the size, so a file that grew since is still read to its end.
  bytes.resize(expected + 1);
  size_t filled = 0;
  for (;;) {
    if (filled == bytes.size()) bytes.resize(bytes.size() * 2);
    const ssize_t got = ::read(fd, bytes.data() + filled, bytes.size() - filled);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      const std::string why = reason();
      ::close(fd);
      LS_FAIL(what, " ", path, ": cannot read (", why, ")");
    }
    filled += static_cast<size_t>(got);
  }
  ::close(fd);
  bytes.resize(filled);
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace lockstep::data
