// lockstep info: the GPUs and the versions of the libraries behind them.
#include <cstdio>

#include "commands.h"
#include "runtime/device.h"

namespace lockstep::app {

int run_info() {
  std::vector<GpuInfo> gpus = cuda_devices();
  if (gpus.empty()) std::printf("no GPU found: lockstep trains on the CPU\n");
  for (const GpuInfo& g : gpus)
    std::printf("cuda:%d  %s  %.1f GiB  compute capability %d.%d\n", g.index, g.name.c_str(),
                static_cast<double>(g.memory_bytes) / (1 << 30), g.major, g.minor);
  std::printf("%s\n", backend_versions().c_str());
  return 0;
}

}  // namespace lockstep::app
