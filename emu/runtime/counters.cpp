// Counters that tests read to prove how the engine uses the runtime: calls on
// the legacy default stream, and allocation calls made while an NCCL
// collective is in flight (emu_runtime.h).
#include "internal.h"

namespace lockstep::emu::detail {
namespace {
std::atomic<uint64_t> g_legacy_calls{0};
std::atomic<int64_t> g_collectives_in_flight{0};
std::atomic<uint64_t> g_allocations_during_collectives{0};
}  // namespace

void count_legacy_stream_call() { g_legacy_calls.fetch_add(1, std::memory_order_relaxed); }

void count_allocation_call() {
  if (g_collectives_in_flight.load(std::memory_order_acquire) > 0)
    g_allocations_during_collectives.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace lockstep::emu::detail

namespace lockstep::emu {

uint64_t legacy_stream_calls() { return detail::g_legacy_calls.load(std::memory_order_relaxed); }

void collective_queued() { detail::g_collectives_in_flight.fetch_add(1, std::memory_order_acq_rel); }
void collective_finished() { detail::g_collectives_in_flight.fetch_sub(1, std::memory_order_acq_rel); }
int64_t collectives_in_flight() { return detail::g_collectives_in_flight.load(std::memory_order_acquire); }

uint64_t allocations_during_collectives() {
  return detail::g_allocations_during_collectives.load(std::memory_order_relaxed);
}

}  // namespace lockstep::emu
