#include "runtime/host_syncs.h"

#if LOCKSTEP_EMULATED_GPU
#include "emu_runtime.h"
#endif

namespace lockstep {

std::optional<uint64_t> host_synchronizations_on_this_thread() {
#if LOCKSTEP_EMULATED_GPU
  return emu::host_synchronizations_on_this_thread();
#else
  return std::nullopt;
#endif
}

std::optional<uint64_t> host_launches_on_this_thread() {
#if LOCKSTEP_EMULATED_GPU
  return emu::host_launches_on_this_thread();
#else
  return std::nullopt;
#endif
}

}  // namespace lockstep
