#include "metrics_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace lockstep::app {

MetricsFile::~MetricsFile() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsFile::open(const std::string& path, bool append) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  LS_CHECK(fd_ >= 0, "cannot write the metrics file ", path, ": ", std::strerror(errno));
  struct stat st {};
  LS_CHECK(::fstat(fd_, &st) == 0, "cannot read the size of the metrics file ", path, ": ", std::strerror(errno));
  whole_ = static_cast<long long>(st.st_size);
}

void MetricsFile::write_line(const std::string& line) {
  if (fd_ < 0) return;
  const std::string text = line + '\n';
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int error = n < 0 ? errno : ENOSPC;
    // Cut back to the last whole line; the file is then left alone.
    const bool cut = ::ftruncate(fd_, static_cast<off_t>(whole_)) == 0;
    ::close(fd_);
    fd_ = -1;
    LS_FAIL("cannot write the metrics file ", path_, ": ", std::strerror(error), "; training stopped",
            cut ? "; the file keeps its lines up to the last whole one" : "", " and the last checkpoint is kept");
  }
  whole_ += static_cast<long long>(text.size());
}

}  // namespace lockstep::app
