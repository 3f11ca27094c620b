#pragma once
// Host synchronisations: each time the calling thread made the host wait for
// GPU work (a stream, event or device synchronise, a synchronous copy, a copy
// to or from pageable memory). A training step makes none before its one
// end-of-step read-back (docs/architecture.md, "The step"); this is how that
// is shown.
//
// Only a GPU runtime that sees every such call can count them. Such a runtime
// offers its per-thread counts as two C functions (host_syncs.cpp names them),
// which the emulated GPU runtime defines (docs/emulated-gpu.md, "Counters");
// the CUDA runtime does not, and there the counts are not available. The
// engine names neither runtime: it asks whether the functions were linked.
#include <cstdint>
#include <optional>

namespace lockstep {

// The calling thread's host synchronisations since it started, or nullopt
// where the GPU runtime cannot count them.
std::optional<uint64_t> host_synchronizations_on_this_thread();

// Host launches: each piece of work the calling thread queued on a GPU
// stream (a kernel, a cuDNN/cuBLAS/NCCL call, a copy or fill, an event record
// or wait, a graph launch) since it started. Work recorded into a CUDA graph
// counts nothing until the graph is launched, and then once: this is how the
// CUDA-graph step shows what it saves the host (ReplicaOptions::cuda_graphs,
// PhaseTimes::host_launches). Counted only where the runtime offers it, as above.
std::optional<uint64_t> host_launches_on_this_thread();

}  // namespace lockstep
