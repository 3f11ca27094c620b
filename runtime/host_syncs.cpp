#include "runtime/host_syncs.h"

// The counters a GPU runtime may offer (host_syncs.h): the calling thread's
// host synchronisations and host launches since it started. Weak references,
// null when no linked runtime defines them.
extern "C" {
__attribute__((weak)) uint64_t lockstep_runtime_host_synchronizations_on_this_thread();
__attribute__((weak)) uint64_t lockstep_runtime_host_launches_on_this_thread();
}

namespace lockstep {

std::optional<uint64_t> host_synchronizations_on_this_thread() {
  if (!lockstep_runtime_host_synchronizations_on_this_thread) return std::nullopt;
  return lockstep_runtime_host_synchronizations_on_this_thread();
}

std::optional<uint64_t> host_launches_on_this_thread() {
  if (!lockstep_runtime_host_launches_on_this_thread) return std::nullopt;
  return lockstep_runtime_host_launches_on_this_thread();
}

}  // namespace lockstep
