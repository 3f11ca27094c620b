#include "training/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/error.h"
#include "training/safetensors.h"

namespace lockstep {

namespace {

constexpr const char* kTag = "lockstep pid ";

// The first bytes of an open lock file ("" when empty).
std::string contents(int fd) {
  char buffer[64] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

bool is_lock_text(const std::string& text) { return text.empty() || text.rfind(kTag, 0) == 0; }

}  // namespace

OutputLock::OutputLock(const std::string& path, const std::string& option) : lock_path_(path + ".lock") {
  // A holder removes its lock file before releasing the lock, so a run may
  // lock a file that is no longer linked: it then tries again with the new one.
  for (int attempt = 0; fd_ < 0; ++attempt) {
    LS_CHECK(attempt < 100, "cannot lock ", lock_path_, ": it keeps being replaced");
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    LS_CHECK(fd >= 0, "cannot create the lock file ", lock_path_, " of ", option, " ", path, ": ",
             std::strerror(errno));
    struct stat held {}, named {};
    if (::fstat(fd, &held) != 0 || !S_ISREG(held.st_mode) || !is_lock_text(contents(fd))) {
      ::close(fd);
      LS_FAIL(lock_path_, " exists and is not a lockstep lock file; lockstep keeps the lock of ", option, " ", path,
              " there: move that file away");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      std::string holder = contents(fd);
      ::close(fd);
      if (error == EWOULDBLOCK) {
        holder = holder.rfind(kTag, 0) == 0 ? holder.substr(std::strlen(kTag)) : std::string("unknown");
        while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
        LS_FAIL(option, " ", path, " is being written by another lockstep run (process ", holder, ", lock file ",
                lock_path_, "); wait for it to end, stop it, or choose another ", option);
      }
      LS_FAIL("cannot lock ", lock_path_, ": ", std::strerror(error));
    }
    if (::stat(lock_path_.c_str(), &named) != 0 || named.st_ino != held.st_ino || named.st_dev != held.st_dev) {
      ::close(fd);  // its holder removed it just now
      continue;
    }
    fd_ = fd;
  }
  const std::string text = kTag + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    const int error = errno;
    ::unlink(lock_path_.c_str());
    ::close(fd_);
    LS_FAIL("cannot write the lock file ", lock_path_, ": ", std::strerror(error));
  }
  // Only a run holding this lock writes the file: any temporary file of it
  // now is a dead run's.
  remove_stale_temporaries(path);
}

OutputLock::~OutputLock() {
  ::unlink(lock_path_.c_str());
  ::close(fd_);  // releases the lock
}

}  // namespace lockstep
