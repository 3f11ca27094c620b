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
  std::set<int> gpus;
  bool all_gpu = true;
  for (const Device& d : devices) {
    all_gpu = all_gpu && d.is_cuda();
    if (d.is_cuda()) gpus.insert(d.index);
  }
  LS_CHECK(gpus.empty() || all_gpu, "replicas must all be on the CPU or all on GPUs");
  if (processes && processes->size() > 1) {
    if (gpus.empty())
      return std::make_unique<HierarchicalCommunicator>(static_cast<int>(devices.size()), std::move(processes),
                                                        timeout);
    // GPUs: one NCCL communicator over every GPU of every process.
    LS_CHECK(gpus.size() == devices.size(), "across processes each replica needs a GPU of its own (NCCL takes one "
             "rank per GPU): process ", processes->rank(), " has ", devices.size(), " replicas on ", gpus.size(),
             " GPU(s)");
#if LOCKSTEP_WITH_CUDA
    return make_nccl_communicator(devices, timeout, processes.get());
#else
    LS_FAIL("process ", processes->rank(), " has replicas on GPUs, but this build has no CUDA backend");
#endif
  }
#if LOCKSTEP_WITH_CUDA
  if (all_gpu && devices.size() > 1 && gpus.size() == devices.size())
    return make_nccl_communicator(devices, timeout);
#endif
  LS_CHECK(gpus.size() <= 1, "ranks on ", gpus.size(), " GPUs with some sharing a GPU: NCCL takes one rank per GPU, "
           "and the local communicator one device");
  return std::make_unique<LocalCommunicator>(static_cast<int>(devices.size()), timeout);
}

}  // namespace lockstep
