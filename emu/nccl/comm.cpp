// Communicators of the emulated NCCL: unique ids, init (all ranks from one
// call, or one rank per call meeting by unique id), destroy, abort, queries,
// version and error strings. Ranks are threads of this process, or of several
// processes of an MPI job (span.h); each rank's device is the one current at
// init.
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "emu/nccl/group.h"
#include "emu/nccl/internal.h"
#include "emu/nccl/span.h"
#include "emu/runtime/emu_runtime.h"
#include <unistd.h>

namespace lockstep::emu::nccl {

namespace {

std::mutex registry_mutex;
std::set<const ncclComm*>& registry() {
  static std::set<const ncclComm*> comms;
  return comms;
}

std::atomic<uint64_t> next_clique_id{1};
constexpr char kMagic[8] = {'L', 'S', 'E', 'M', 'N', 'C', 'C', 'L'};

// Ranks of one unique id gathering: shared, so a waiter outlives the entry.
struct Rendezvous {
  std::string key;
  std::shared_ptr<Clique> clique;
  std::vector<int> devices;  // -1 until that rank joins (in this process)
  int joined = 0;
  bool settling = false;  // a thread is finding the missing ranks in the other processes
  bool settled = false;   // found (the clique spans processes), or not: `error`
  std::string error;
};
std::mutex rendezvous_mutex;
std::condition_variable rendezvous_cv;
// Keyed by the id's bytes after the magic: its number, and the process and
// host that made it, so ids made by different processes never meet by accident.
std::map<std::string, std::shared_ptr<Rendezvous>> rendezvous;

bool valid_device(int d) { return d >= 0 && d < device_count(); }

ncclResult_t wait_complete(const std::shared_ptr<Rendezvous>& r) {
  std::unique_lock lock(rendezvous_mutex);
  const int n = r->clique->size();
  if (r->joined < n && !r->settling && mpi_world_size() > 1) {
    // The ranks not here are in the other processes of the MPI job (span.h).
    r->settling = true;
    rendezvous.erase(r->key);
    std::vector<int> local;
    for (int rank = 0; rank < n; ++rank)
      if (r->devices[size_t(rank)] != -1) local.push_back(rank);
    lock.unlock();
    std::string why;
    std::unique_ptr<ProcessSpan> span = ProcessSpan::join(r->key, n, local, why);
    const bool spans = span != nullptr;
    if (spans) r->clique->span(std::move(span), local);
    lock.lock();
    r->settled = true;
    if (!spans) r->error = why;
    rendezvous_cv.notify_all();
  }
  rendezvous_cv.wait(lock, [&] { return r->joined == n || r->settled; });
  if (!r->error.empty()) return warn(ncclInvalidUsage, "ncclCommInitRank", "across processes: " + r->error);
  return ncclSuccess;
}

}  // namespace

void register_comm(ncclComm* comm) {
  std::lock_guard lock(registry_mutex);
  registry().insert(comm);
}

bool live(const ncclComm* comm) {
  std::lock_guard lock(registry_mutex);
  return comm && registry().count(comm) != 0;
}

void unregister_comm(ncclComm* comm) {
  std::lock_guard lock(registry_mutex);
  registry().erase(comm);
}

ncclResult_t warn(ncclResult_t r, const char* call, const std::string& why) {
  std::fprintf(stderr, "lockstep emulated NCCL WARN %s: %s (%s)\n", call, why.c_str(), ncclGetErrorString(r));
  return r;
}

}  // namespace lockstep::emu::nccl

using namespace lockstep::emu::nccl;
using lockstep::emu::current_device;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return warn(ncclInvalidArgument, "ncclGetVersion", "version is null");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) {
  // NCCL's own texts.
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return warn(ncclInvalidArgument, "ncclGetUniqueId", "uniqueId is null");
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, kMagic, sizeof(kMagic));
  const uint64_t n = next_clique_id.fetch_add(1);
  std::memcpy(id->internal + 8, &n, sizeof(n));
  // The maker, as NCCL's id holds its root's address: ids from two processes differ.
  const int64_t pid = getpid();
  std::memcpy(id->internal + 16, &pid, sizeof(pid));
  gethostname(id->internal + 24, sizeof(id->internal) - 25);
  return ncclSuccess;
}

// Joins `rank` to the ranks gathering under `id`; blocks until all nranks have
// joined, except inside ncclGroupStart/End, where the wait happens at
// ncclGroupEnd (so one thread may initialise several ranks).
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  const char* call = "ncclCommInitRank";
  if (!comm) return warn(ncclInvalidArgument, call, "comm is null");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return warn(ncclInvalidArgument, call, "rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  if (std::memcmp(id.internal, kMagic, sizeof(kMagic)) != 0)
    return warn(ncclInvalidArgument, call, "the unique id does not come from ncclGetUniqueId");
  const int device = current_device();
  if (!valid_device(device)) return warn(ncclInvalidUsage, call, "no valid current device");
  uint64_t number = 0;
  std::memcpy(&number, id.internal + 8, sizeof(number));
  const std::string key(id.internal + 8, sizeof(id.internal) - 8);
  std::shared_ptr<Rendezvous> r;
  {
    std::lock_guard lock(rendezvous_mutex);
    auto& slot = rendezvous[key];
    if (!slot) {
      slot = std::make_shared<Rendezvous>();
      slot->key = key;
      slot->clique = std::make_shared<Clique>(number, nranks);
      slot->devices.assign(size_t(nranks), -1);
    }
    r = slot;
    if (r->clique->size() != nranks)
      return warn(ncclInvalidArgument, call, "nranks " + std::to_string(nranks) + " differs from the " +
                                                 std::to_string(r->clique->size()) + " of another rank");
    if (r->devices[size_t(rank)] != -1) return warn(ncclInvalidUsage, call, "rank " + std::to_string(rank) + " joined twice");
    for (int other = 0; other < nranks; ++other)
      if (r->devices[size_t(other)] == device)
        return warn(ncclInvalidUsage, call, "Duplicate GPU detected: rank " + std::to_string(other) + " and rank " +
                                                std::to_string(rank) + " both on device " + std::to_string(device));
    r->devices[size_t(rank)] = device;
    if (++r->joined == nranks) rendezvous.erase(key);  // ids are single-use
  }
  rendezvous_cv.notify_all();
  auto* c = new ncclComm{r->clique, rank, device};
  register_comm(c);
  *comm = c;
  if (in_group()) {
    defer([r] { return wait_complete(r); });
    return ncclSuccess;
  }
  return wait_complete(r);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* call = "ncclCommInitAll";
  if (!comms) return warn(ncclInvalidArgument, call, "comms is null");
  if (ndev < 1) return warn(ncclInvalidArgument, call, "ndev " + std::to_string(ndev) + " must be at least 1");
  std::vector<int> devices(static_cast<size_t>(ndev));
  for (int i = 0; i < ndev; ++i) {
    devices[size_t(i)] = devlist ? devlist[i] : i;
    if (!valid_device(devices[size_t(i)]))
      return warn(ncclInvalidArgument, call, "device " + std::to_string(devices[size_t(i)]) + " does not exist");
    for (int j = 0; j < i; ++j)
      if (devices[size_t(j)] == devices[size_t(i)])
        return warn(ncclInvalidUsage, call, "Duplicate GPU detected: rank " + std::to_string(j) + " and rank " +
                                                std::to_string(i) + " both on device " +
                                                std::to_string(devices[size_t(i)]));
  }
  auto clique = std::make_shared<Clique>(next_clique_id.fetch_add(1), ndev);
  for (int i = 0; i < ndev; ++i) {
    comms[i] = new ncclComm{clique, i, devices[size_t(i)]};
    register_comm(comms[i]);
  }
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;  // as NCCL
  if (!live(comm)) return warn(ncclInvalidArgument, "ncclCommDestroy", "not a live communicator");
  // Queued collectives hold the clique, never the comm: they finish (or stay
  // blocked, as on GPUs, until another rank aborts) without it.
  unregister_comm(comm);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (!live(comm)) return warn(ncclInvalidArgument, "ncclCommAbort", "not a live communicator");
  unregister_comm(comm);
  // Every rank of the clique is released: on GPUs the peers' kernels would
  // see the connection go and fail; here their queued work ends.
  comm->clique->abort(comm->rank);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (!error) return warn(ncclInvalidArgument, "ncclCommGetAsyncError", "asyncError is null");
  if (!live(comm)) return warn(ncclInvalidArgument, "ncclCommGetAsyncError", "not a live communicator");
  // A peer aborted: the collectives of this rank can no longer complete.
  // When ranks had called different collectives, that is the cause to name.
  *error = !comm->clique->aborted()     ? ncclSuccess
           : comm->clique->saw_mismatch() ? ncclInvalidUsage
                                          : ncclRemoteError;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!count || !live(comm)) return warn(ncclInvalidArgument, "ncclCommCount", "bad argument");
  *count = comm->clique->size();
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!rank || !live(comm)) return warn(ncclInvalidArgument, "ncclCommUserRank", "bad argument");
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!device || !live(comm)) return warn(ncclInvalidArgument, "ncclCommCuDevice", "bad argument");
  *device = comm->device;
  return ncclSuccess;
}

}  // extern "C"
