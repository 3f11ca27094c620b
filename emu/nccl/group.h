#pragma once
// ncclGroupStart/End of the calling thread: calls inside a group do their
// argument checks at once and their queueing (and, for ncclCommInitRank, the
// wait for the other ranks) at the outermost ncclGroupEnd, so one thread can
// drive several ranks as NCCL documents.
#include <nccl.h>

#include <functional>

namespace lockstep::emu::nccl {

bool in_group();
void defer(std::function<ncclResult_t()> action);

}  // namespace lockstep::emu::nccl
