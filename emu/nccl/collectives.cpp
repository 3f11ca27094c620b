// ncclAllReduce and ncclBroadcast: arguments are checked when called (as
// NCCL's argument checks do, plus device-pointer checks NCCL makes only with
// NCCL_CHECK_POINTERS=1); the collective itself is queued on the stream and
// meets the other ranks there (clique.h).
#include <climits>
#include <memory>
#include <optional>
#include <string>

#include "emu/nccl/group.h"
#include "emu/nccl/internal.h"
#include "emu/runtime/emu_runtime.h"

using namespace lockstep::emu::nccl;

namespace {

// NCCL documents that one thread driving several ranks must group its calls
// (each call may block until the other ranks arrive). A thread that issues,
// outside a group, collectives for two ranks of one communicator is refused.
thread_local uint64_t last_clique = 0;
thread_local int last_rank = -1;

// One collective counted in flight (emu_runtime.h) for its lifetime.
struct InFlight {
  InFlight() { lockstep::emu::collective_queued(); }
  ~InFlight() { lockstep::emu::collective_finished(); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
};

ncclResult_t issue(const char* name, ncclComm_t comm, const Call& c, cudaStream_t stream) {
  if (!live(comm)) return warn(ncclInvalidArgument, name, "comm is not a live communicator");
  if (c.type < 0 || c.type >= ncclNumTypes) return warn(ncclInvalidArgument, name, "unknown data type");
  if (type_size(c.type) == 0)
    return warn(ncclInvalidArgument, name, "data type " + std::to_string(int(c.type)) + " (half, fp8) is not emulated");
  if (c.kind == Kind::all_reduce && (c.op < 0 || c.op >= ncclNumOps))
    return warn(ncclInvalidArgument, name, "unknown reduction op");
  const int n = comm->clique->size();
  if (c.kind == Kind::broadcast && (c.root < 0 || c.root >= n))
    return warn(ncclInvalidArgument, name, "root " + std::to_string(c.root) + " of " + std::to_string(n) + " ranks");
  const int device = comm->device;
  if (stream && lockstep::emu::stream_device(stream) != device)
    return warn(ncclInvalidUsage, name, "the stream belongs to device " +
                                            std::to_string(lockstep::emu::stream_device(stream)) +
                                            ", the communicator's rank to device " + std::to_string(device));
  if (c.count == 0) return ncclSuccess;  // nothing moves; not a collective to match
  const size_t bytes = c.count * type_size(c.type);
  if (bytes > size_t(INT_MAX) && comm->clique->spans_processes())
    return warn(ncclInvalidArgument, name, std::to_string(bytes) + " bytes per rank: the emulated NCCL carries at most " +
                                               std::to_string(INT_MAX) + " across processes (one MPI element per rank)");
  const bool sends = c.kind == Kind::all_reduce || c.root == comm->rank;
  if (sends && !lockstep::emu::is_device_range(c.send, bytes, device))
    return warn(ncclInvalidArgument, name, "sendbuff is not " + std::to_string(bytes) + " bytes of device " +
                                               std::to_string(device) + " memory");
  if (!lockstep::emu::is_device_range(c.recv, bytes, device))
    return warn(ncclInvalidArgument, name, "recvbuff is not " + std::to_string(bytes) + " bytes of device " +
                                               std::to_string(device) + " memory");
  const int rank = comm->rank;
  const uint64_t clique_id = comm->clique->id();
  if (!in_group()) {
    if (last_clique == clique_id && last_rank != rank)
      return warn(ncclInvalidUsage, name, "this thread issued collectives for ranks " + std::to_string(last_rank) +
                                              " and " + std::to_string(rank) +
                                              " of one communicator outside ncclGroupStart/End, which NCCL "
                                              "documents can deadlock");
    last_clique = clique_id, last_rank = rank;
  }
  auto action = [clique = comm->clique, rank, device, c, stream, name]() -> ncclResult_t {
    // NCCL makes the rank's device current itself; the legacy stream (0) is
    // that device's.
    const int previous = lockstep::emu::current_device();
    if (!stream && previous != device) cudaSetDevice(device);
    // In flight from now until its task is over (run, skipped after a fault,
    // or refused): the token's last copy goes with the task. A collective
    // recorded into a graph is in flight only while a replay runs it.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (stream && cudaStreamIsCapturing(stream, &capture) != cudaSuccess) capture = cudaStreamCaptureStatusNone;
    const bool captured = capture != cudaStreamCaptureStatusNone;
    std::shared_ptr<InFlight> token = captured ? nullptr : std::make_shared<InFlight>();
    cudaError_t e = lockstep::emu::enqueue(stream, name, [clique, rank, c, token, captured] {
      std::optional<InFlight> replayed;
      if (captured) replayed.emplace();
      clique->run(rank, c);
    });
    if (!stream && previous != device) cudaSetDevice(previous);
    return e == cudaSuccess ? ncclSuccess : warn(ncclUnhandledCudaError, name, cudaGetErrorName(e));
  };
  if (in_group()) {
    defer(action);
    return ncclSuccess;
  }
  return action();
}

}  // namespace

extern "C" {

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  Call c{Kind::all_reduce, count, datatype, op, -1, sendbuff, recvbuff};
  return issue("ncclAllReduce", comm, c, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  Call c{Kind::broadcast, count, datatype, ncclSum, root, sendbuff, recvbuff};
  return issue("ncclBroadcast", comm, c, stream);
}

}  // extern "C"
