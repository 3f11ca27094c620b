#include "data/loader_threads.h"

#include <algorithm>

#include "base/error.h"

namespace lockstep::data {

int default_loader_threads(int cores, int processes_on_host, int gpu_replicas) {
  const int share = std::max(1, cores / std::max(1, processes_on_host));
  if (gpu_replicas <= 0) return std::min(2, share);
  return std::clamp(share - gpu_replicas, 2, 32);
}

void check_loader_threads(int threads, const std::string& option) {
  LS_CHECK(threads >= 1, option, " must be at least 1, got ", threads);
  LS_CHECK(threads <= kMaxLoaderThreads, option, " ", threads, ": more than the ", kMaxLoaderThreads,
           " threads lockstep starts; give at most ", kMaxLoaderThreads, " (one or two per core keep it busy)");
}

}  // namespace lockstep::data
