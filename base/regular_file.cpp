#include "base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "base/error.h"

namespace lockstep {
namespace {

// A link whose target is not there (stat failed with ENOENT, lstat finds the link).
bool dangling_link(const std::string& path, int stat_error) {
  struct stat link {};
  return stat_error == ENOENT && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
}

}  // namespace

std::string errno_reason(int error) { return std::error_code(error, std::generic_category()).message(); }

std::string file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

std::string not_a_file_reason(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    if (dangling_link(path, error)) return "is a link to nothing (dangling)";
    if (error == ENOENT) return "is not there (no such file)";
    return "cannot be read (" + errno_reason(error) + ")";
  }
  if (S_ISREG(info.st_mode)) return "";
  return "is " + file_kind(info.st_mode) + ", not a regular file";
}

int open_regular_file(const std::string& path, const std::string& what, uint64_t& size) {
  // O_NONBLOCK: open() on a FIFO would otherwise wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    LS_CHECK(!dangling_link(path, error), what, " ", path, ": is a link to nothing (dangling)");
    LS_FAIL(what, " ", path, ": cannot open (", errno_reason(error), ")");
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    LS_FAIL(what, " ", path, ": cannot read its status (", errno_reason(error), ")");
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    LS_FAIL(what, " ", path, ": is ", file_kind(info.st_mode), ", not a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  size = info.st_size > 0 ? static_cast<uint64_t>(info.st_size) : 0;
  return fd;
}

}  // namespace lockstep
