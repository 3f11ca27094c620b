// lockstep info: the GPUs, the versions of the libraries behind them, and
// the world a launcher started this process in.
#include <cstdio>

#include "commands.h"
#include "distributed/world.h"
#include "runtime/device.h"

namespace lockstep::app {

int run_info() {
  std::vector<GpuInfo> gpus = cuda_devices();
  std::shared_ptr<ProcessGroup> world = join_world();
  // Under a launcher every process would print the same: the first speaks.
  if (world && world->rank() != 0) return 0;
  if (gpus.empty()) std::printf("no GPU found: lockstep trains on the CPU\n");
  for (const GpuInfo& g : gpus)
    std::printf("cuda:%d  %s  %.1f GiB  compute capability %d.%d\n", g.index, g.name.c_str(),
                static_cast<double>(g.memory_bytes) / (1 << 30), g.major, g.minor);
  std::printf("%s\n", backend_versions().c_str());
  std::string per_process = gpus.empty() ? "1 on the CPU (--replicas N for more)" : std::to_string(gpus.size()) + " (one per GPU)";
  if (!world)
    std::printf("world: 1 process on this host, replicas per process: %s; multi-process transport: %s\n",
                per_process.c_str(), mpi_library().c_str());
  else
    std::printf("world: %d processes on %d host%s, replicas per process: %s, transport: %s\n",
                world->size(), world->hosts(), world->hosts() == 1 ? "" : "s", per_process.c_str(),
                world->transport().c_str());
  return 0;
}

}  // namespace lockstep::app
