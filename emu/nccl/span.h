#pragma once
// Communicators of the emulated NCCL whose ranks live in several processes
// (an MPI job: mpirun, srun). Real NCCL bootstraps and moves data over its own
// sockets; the stand-in carries both over MPI, so the multi-process GPU path
// runs on emulated devices too.
//
// When a communicator spans processes. A rank joins with ncclCommInitRank;
// when its init completes (at the outermost ncclGroupEnd, or at once outside a
// group) and fewer than nranks ranks have joined in this process, and MPI is
// initialised in a world of more than one process, the other ranks are taken
// to be in the other processes: every process of MPI_COMM_WORLD must then be
// completing an init of the same unique id, each offering the ranks it holds
// (join()). Unsupported, and refused where it can be seen: a communicator over
// a subset of the world's processes (the others never join: a hang, as a
// missing rank hangs NCCL's init), and several threads of one process each
// initialising one rank without a group (the first to complete would offer
// only its own rank; the union check then fails on every process).
//
// The data. A collective gathers every rank's send buffer to every process
// (MPI_Allgatherv) and each process reduces in global rank order, as the
// single-process clique does: every rank of every process gets the same bits,
// the emulator's rank-order contract unchanged. This moves nranks times the
// data NCCL's ring would; the emulator proves logic, not speed.
//
// Threading. MPI is called from the stream worker of the last local rank to
// reach a collective (and from the initialising thread), one call at a time
// within the emulator. The caller must not call MPI from another thread while
// a collective of a spanning communicator is in flight when MPI was
// initialised with less than MPI_THREAD_MULTIPLE (lockstep calls MPI between
// steps only, when every collective has completed).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lockstep::emu::nccl {

// The MPI world's size when MPI is initialised (and not finalised) in this
// process; 1 otherwise, and always in a build without MPI.
int mpi_world_size();

// Polled while an MPI operation is in flight: true gives up on it.
using Aborted = std::function<bool()>;

class ProcessSpan {
public:
  virtual ~ProcessSpan() = default;
  // Collective over every process of the MPI world: each offers `local_ranks`
  // (global ranks, ascending) of a communicator of `nranks` under `key` (the
  // unique id's bytes). Null with `why` set when the offers do not make one
  // communicator: ids or nranks differ, a rank is missing or offered twice.
  static std::unique_ptr<ProcessSpan> join(const std::string& key, int nranks, const std::vector<int>& local_ranks,
                                           std::string& why);

  // Whether every process issued the same collective (`record`: kind, count,
  // type, op, root); if not, `theirs` is the first differing record and
  // `process` its MPI rank. `completed` is false when aborted while waiting.
  struct Agreement {
    bool completed = false;
    bool same = true;
    std::vector<int64_t> theirs;
    int process = -1;
  };
  virtual Agreement agree(const std::vector<int64_t>& record, const Aborted& aborted) = 0;
  // Gathers `block` (this process's ranks' buffers, `bytes_per_rank` each, in
  // ascending rank order) into `all` (nranks buffers in global rank order).
  // False when `aborted()` became true first; `block` must then stay
  // allocated (MPI may still read it): the caller leaks it.
  virtual bool gather(const unsigned char* block, size_t bytes_per_rank, unsigned char* all,
                      const Aborted& aborted) = 0;
  // Copies `bytes` at `data` from the process holding rank `root` to every
  // process (in place). False as gather's.
  virtual bool broadcast(unsigned char* data, size_t bytes, int root, const Aborted& aborted) = 0;
  virtual int processes() const = 0;
};

}  // namespace lockstep::emu::nccl
