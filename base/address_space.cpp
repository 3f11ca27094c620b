#include "base/address_space.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>

namespace lockstep {

namespace {

// The limit as it stands now (0: none); a getrlimit is cheap next to the
// allocations and calls it guards.
size_t address_space_limit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<size_t>(limit.rlim_cur);
}

// The address space the process holds (what RLIMIT_AS is compared with),
// from /proc/self/statm's first field; 0 when it cannot be read. Read into
// the stack, not through stdio: asked when memory is short, it must not
// allocate (a FILE's buffer could fail, and the answer with it).
size_t address_space_used() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const unsigned long pages = std::strtoul(text, nullptr, 10);
  return static_cast<size_t>(pages) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

size_t margin_for(size_t limit) {
  const size_t floor = size_t{64} << 20;
  return limit == 0 ? 0 : (limit / 16 > floor ? limit / 16 : floor);
}

}  // namespace

bool address_space_allows(size_t bytes, int margin_halves) {
  const size_t limit = address_space_limit();
  if (limit == 0) return true;
  const size_t needed = address_space_used() + bytes + margin_for(limit) / 2 * static_cast<size_t>(margin_halves);
  return needed >= bytes && needed <= limit;  // (needed < bytes: it wrapped)
}

}  // namespace lockstep
