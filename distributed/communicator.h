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
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "runtime/context.h"

namespace lockstep {

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  // Sums `count` floats at `data` over all ranks, in place, on every rank. On
  // a GPU the sum may still be in flight when this returns: wait() orders it
  // before later work on the compute stream.
  virtual void all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) = 0;
  // The same for doubles (statistics that need more than float precision,
  // counts exact beyond 2^24).
  virtual void all_reduce_sum(int rank, Context& ctx, double* data, int64_t count) = 0;
  // Makes later work on `ctx`'s compute stream wait for this rank's collectives.
  virtual void wait(int rank, Context& ctx) = 0;
  // Releases every rank blocked in (or later entering) a collective with an
  // Error that carries `reason`. The communicator stays unusable afterwards.
  virtual void abort(const std::string& reason) = 0;
};

// Time a rank waits at a collective before it is declared hung.
inline constexpr std::chrono::seconds default_collective_timeout{300};

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
