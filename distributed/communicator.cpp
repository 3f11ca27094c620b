#include "distributed/communicator.h"

#include <set>

#include "base/error.h"
#include "distributed/hierarchical_communicator.h"
#include "distributed/local_communicator.h"

namespace lockstep {

std::unique_ptr<Communicator> make_communicator(const std::vector<Device>& devices,
                                                std::chrono::milliseconds timeout,
                                                std::shared_ptr<ProcessGroup> processes) {
  LS_CHECK(!devices.empty(), "a communicator needs at least one rank");
  if (processes && processes->size() > 1) {
    for (const Device& d : devices)
      LS_CHECK(d.is_cpu(), "training across ", processes->size(), " processes runs on the CPU only so far; process ",
               processes->rank(), " has a replica on ", d.str(), " (use --devices cpu)");
    return std::make_unique<HierarchicalCommunicator>(static_cast<int>(devices.size()), std::move(processes), timeout);
  }
  std::set<int> gpus;
  bool all_gpu = true;
  for (const Device& d : devices) {
    all_gpu = all_gpu && d.is_cuda();
    if (d.is_cuda()) gpus.insert(d.index);
  }
  LS_CHECK(gpus.empty() || all_gpu, "replicas must all be on the CPU or all on GPUs");
#if LOCKSTEP_WITH_CUDA
  if (all_gpu && devices.size() > 1 && gpus.size() == devices.size())
    return make_nccl_communicator(devices, timeout);
#endif
  LS_CHECK(gpus.size() <= 1, "ranks on ", gpus.size(), " GPUs with some sharing a GPU: NCCL takes one rank per GPU, "
           "and the local communicator one device");
  return std::make_unique<LocalCommunicator>(static_cast<int>(devices.size()), timeout);
}

}  // namespace lockstep
