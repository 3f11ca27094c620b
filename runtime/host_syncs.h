#pragma once
// Host synchronisations: each time the calling thread made the host wait for
// GPU work (a stream, event or device synchronise, a synchronous copy, a copy
// to or from pageable memory). A training step makes none before its one
// end-of-step read-back (docs/architecture.md, "The step"); this is how that
// is shown.
//
// Only the emulated GPU runtime can count them (it sees every such call); on
// a real GPU or without a GPU backend the count is not available.
#include <cstdint>
#include <optional>

namespace lockstep {

// The calling thread's host synchronisations since it started, or nullopt
// where this build cannot count them.
std::optional<uint64_t> host_synchronizations_on_this_thread();

// Host launches: each piece of work the calling thread queued on a GPU
// stream (a kernel, a cuDNN/cuBLAS/NCCL call, a copy or fill, an event record
// or wait, a graph launch) since it started. Work recorded into a CUDA graph
// counts nothing until the graph is launched, and then once: this is how the
// CUDA-graph step shows what it saves the host (ReplicaOptions::cuda_graphs,
// PhaseTimes::host_launches). Counted by the emulated runtime only, as above.
std::optional<uint64_t> host_launches_on_this_thread();

}  // namespace lockstep
