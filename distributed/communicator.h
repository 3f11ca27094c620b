#pragma once
// Collectives between the replicas of one process, or of every process of a
// multi-process run. Each rank calls from its own thread, in the same order
// on every rank.
//  - NcclCommunicator (distributed/cuda/): one rank per distinct GPU (of every
//    process); calls are queued on the context's communication stream and
//    return at once.
//  - LocalCommunicator: replicas on the CPU, or several on one GPU (NCCL
//    refuses two ranks on one device); calls block until every rank arrived.
//  - HierarchicalCommunicator: CPU replicas of several processes (MPI).
// The interface they share is in communicator_interface.h, which they include
// instead of this file: make_communicator here includes them.
#include <chrono>
#include <memory>
#include <vector>

#include "distributed/communicator_interface.h"
#include "distributed/process_group.h"

namespace lockstep {

// The communicator for ranks on `devices` (rank r on devices[r]): NCCL when
// they are two or more distinct GPUs, the local communicator otherwise (the
// CPU, one rank, or several ranks sharing one GPU, which NCCL refuses).
// With `processes` of more than one process the ranks are this process's
// share of a larger group: the hierarchical communicator on the CPU, one NCCL
// communicator over every process's GPUs (one rank per GPU) on GPUs.
std::unique_ptr<Communicator> make_communicator(const std::vector<Device>& devices,
                                                std::chrono::milliseconds timeout = default_collective_timeout,
                                                std::shared_ptr<ProcessGroup> processes = nullptr);

#if LOCKSTEP_WITH_CUDA
// One NCCL rank per GPU of `devices` (all distinct), over every process of
// `processes` when it is given: the NcclCommunicator, made in
// distributed/cuda/nccl_communicator.cpp, so make_communicator needs no CUDA header.
std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<Device>& devices,
                                                     std::chrono::milliseconds timeout,
                                                     ProcessGroup* processes = nullptr);
#endif

}  // namespace lockstep
