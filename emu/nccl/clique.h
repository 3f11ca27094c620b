#pragma once
// The meeting point of one communicator's ranks. Each rank's k-th collective
// runs on that rank's stream worker and blocks there until every rank has
// reached its k-th collective (a sequence number per rank, counted when the
// work runs, so a replayed graph issues new collectives). Calls that differ
// (kind, count, type, op, root) never proceed: they stay blocked, as NCCL's
// kernels would spin, and one stderr line names the mismatch when it is seen.
// abort() releases every blocked rank; released work touches no buffer.
//
// A clique whose ranks span processes (span.h) holds only this process's
// ranks: the last of them to arrive gathers every rank's buffer over MPI and
// reduces in global rank order, so the sums are the same bits everywhere.
#include <nccl.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "emu/nccl/span.h"

namespace lockstep::emu::nccl {

enum class Kind { all_reduce, broadcast };

struct Call {
  Kind kind = Kind::all_reduce;
  size_t count = 0;
  ncclDataType_t type = ncclFloat;
  ncclRedOp_t op = ncclSum;  // all-reduce only
  int root = -1;             // broadcast only
  const void* send = nullptr;
  void* recv = nullptr;
};

std::string describe(const Call& c);
size_t type_size(ncclDataType_t t);  // 0 for a type the stand-in does not reduce

class Clique {
public:
  Clique(uint64_t id, int nranks);
  uint64_t id() const { return id_; }
  int size() const { return nranks_; }
  // Makes this a clique across processes, of which `local_ranks` (ascending)
  // are here. Called once, when init completes, before any collective.
  void span(std::unique_ptr<ProcessSpan> processes, std::vector<int> local_ranks);
  bool spans_processes() const;

  // Runs `rank`'s next collective; false when the clique was aborted before
  // it completed (nothing was written then).
  bool run(int rank, const Call& call);
  // Releases every blocked rank and waits until no rank is moving data, so
  // the caller may free buffers once this returns.
  void abort(int by_rank);
  bool aborted() const;
  bool saw_mismatch() const;

private:
  struct Slot {
    std::vector<std::optional<Call>> calls;
    int arrived = 0, left = 0;
    bool mismatch = false, computing = false, computed = false;
    std::vector<unsigned char> result;
  };
  void compute(Slot& s);
  // The spanning clique's part after the local buffers are copied into
  // `block`: agreement and data over MPI. False when aborted or the processes
  // called different collectives (then s.mismatch is set).
  bool compute_across(Slot& s, const Call& call, std::vector<unsigned char> block);

  const uint64_t id_;
  const int nranks_;
  int local_ranks_count_;                // nranks_ unless spanning
  std::vector<int> local_ranks_;         // spanning only
  std::shared_ptr<ProcessSpan> processes_;  // null unless spanning
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::vector<uint64_t> next_seq_;
  std::map<uint64_t, Slot> slots_;
  int moving_ = 0;  // ranks reading or writing buffers right now
  bool aborted_ = false, mismatch_ = false;
};

}  // namespace lockstep::emu::nccl
