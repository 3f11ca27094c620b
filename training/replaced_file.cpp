#include "training/replaced_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/folder_sync.h"

namespace lockstep {

std::string temporary_prefix(const std::string& path) { return path + ".tmp-"; }

void write_replacing(const std::string& path, const std::function<bool(std::FILE*)>& write) {
  static std::atomic<uint64_t> writes{0};
  const std::string tmp = temporary_prefix(path) + std::to_string(::getpid()) + "-" + std::to_string(writes++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  LS_CHECK(fd >= 0, "cannot write ", tmp, ": ", std::strerror(errno), "; ", path, " was left as it was");
  std::FILE* f = ::fdopen(fd, "wb");
  if (f == nullptr) {
    const int saved = errno;
    ::close(fd);
    std::remove(tmp.c_str());
    LS_FAIL("cannot write ", tmp, ": ", std::strerror(saved));
  }
  bool ok = write(f);
  ok = ok && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  int saved_errno = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    LS_FAIL("writing ", tmp, " failed: ", std::strerror(saved_errno), "; ", path, " was left as it was");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    LS_FAIL("cannot rename ", tmp, " to ", path, ": ", ec.message());
  }
  sync_folder_of(path);  // the rename reaches the disk only with its folder
}

}  // namespace lockstep
