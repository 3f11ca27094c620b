#include "data/loader_threads.h"

#include <algorithm>

namespace lockstep::data {

int default_loader_threads(int cores, int processes_on_host, int gpu_replicas) {
  const int share = std::max(1, cores / std::max(1, processes_on_host));
  if (gpu_replicas <= 0) return std::min(2, share);
  return std::clamp(share - gpu_replicas, 2, 32);
}

}  // namespace lockstep::data
