#include "emu/nccl/group.h"

#include <utility>
#include <vector>

#include "emu/nccl/internal.h"

namespace lockstep::emu::nccl {

namespace {
thread_local int depth = 0;
thread_local std::vector<std::function<ncclResult_t()>> pending;
}  // namespace

bool in_group() { return depth > 0; }

void defer(std::function<ncclResult_t()> action) { pending.push_back(std::move(action)); }

}  // namespace lockstep::emu::nccl

using namespace lockstep::emu::nccl;

extern "C" {

ncclResult_t ncclGroupStart() {
  ++depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (depth == 0) return warn(ncclInvalidUsage, "ncclGroupEnd", "no matching ncclGroupStart");
  if (--depth > 0) return ncclSuccess;  // only the outermost end issues
  auto actions = std::exchange(pending, {});
  ncclResult_t first = ncclSuccess;
  for (auto& action : actions) {
    ncclResult_t r = action();
    if (first == ncclSuccess) first = r;
  }
  return first;
}

}  // extern "C"
