#pragma once
// The object behind NCCL's opaque handle (struct ncclComm) and what the
// emulated NCCL's files share.
#include <nccl.h>

#include <memory>

#include "emu/nccl/clique.h"

struct ncclComm {
  std::shared_ptr<lockstep::emu::nccl::Clique> clique;
  int rank = 0;
  int device = 0;  // current at init (ncclCommInitAll: devlist[rank])
};

namespace lockstep::emu::nccl {

// Communicators handed out and not yet destroyed or aborted: a call on any
// other pointer is refused instead of reading freed memory.
void register_comm(ncclComm* comm);
bool live(const ncclComm* comm);
void unregister_comm(ncclComm* comm);

// Prints why a call fails to stderr (NCCL's own WARN lines) and returns `r`.
ncclResult_t warn(ncclResult_t r, const char* call, const std::string& why);

}  // namespace lockstep::emu::nccl
