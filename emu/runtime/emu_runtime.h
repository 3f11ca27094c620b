#pragma once
// The emulated CUDA runtime's own interface: what the cuDNN, cuBLAS and NCCL
// stand-ins (emu/cudnn, emu/cublas, emu/nccl) and the emulator's tests use
// beside the CUDA runtime API itself (cuda_runtime_api.h, implemented in
// emu/runtime). Nothing here is seen by lockstep's kernels or engine, except
// the few queries at the end that tests read.
//
// Contract (the stand-ins rely on every line):
// - Each stream has its own worker thread that runs the stream's queue in order.
//   Work queued with enqueue() runs on that worker; it may block (an NCCL
//   collective waits there for the other ranks), which blocks that stream only.
// - While a stream is being captured, enqueue() records the work into the
//   capture's graph instead; it runs when the graph is launched.
// - Device memory is host heap memory, allocated at exact sizes; every
//   allocation remembers its device and kind.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace lockstep::emu {

// Queues `work` on `stream` (nullptr = the legacy default stream of the
// current device; cudaStreamPerThread as documented). `name` appears in
// diagnostics. Returns cudaSuccess, or the error the runtime would give
// (invalid stream, a call CUDA refuses during capture) without queueing.
cudaError_t enqueue(cudaStream_t stream, const char* name, std::function<void()> work);

// The device a stream belongs to (the legacy stream: the current device).
int stream_device(cudaStream_t stream);
// The calling thread's current device (cudaSetDevice).
int current_device();
// The number of emulated devices (LOCKSTEP_EMU_DEVICES, 1..8).
int device_count();

struct Allocation {
  enum class Kind { device, pinned_host };
  const void* base = nullptr;
  size_t bytes = 0;
  int device = -1;  // -1 for pinned host memory
  Kind kind = Kind::device;
};
// The allocation that contains `p`, if any (device or pinned host memory
// handed out by the runtime; pageable host memory has none).
std::optional<Allocation> find_allocation(const void* p);
// True when [p, p + bytes) lies inside one device allocation of `device`.
bool is_device_range(const void* p, size_t bytes, int device);

// From inside queued work: records an asynchronous (sticky) error on `device`,
// as a faulting kernel does on a GPU, and prints `message` to stderr once.
// Later synchronising calls on that device return `error`.
void fail_async(int device, cudaError_t error, const std::string& message);

// Calls that make the host wait for device work (cudaStreamSynchronize,
// cudaDeviceSynchronize, cudaEventSynchronize, synchronous cudaMemcpy/Memset,
// a copy to or from pageable host memory, ...) since the process started.
uint64_t host_synchronizations();
// The same, counting only the calls the calling thread made (a replica's
// thread, whatever the other replicas do at the same time).
uint64_t host_synchronizations_on_this_thread();
// Work the calling thread queued on streams since it started: each kernel
// launch, library call (cuDNN, cuBLAS, NCCL), copy, fill, event record or
// wait, host function and graph launch counts one; work recorded into a
// capture counts nothing (its graph's launch counts one).
uint64_t host_launches_on_this_thread();
// Calls that named the legacy default stream (stream 0 or cudaStreamLegacy,
// the synchronous cudaMemcpy and cudaMemset included) since the process
// started: lockstep's engine queues all its work on streams it created, so a
// training step makes none.
uint64_t legacy_stream_calls();
// NCCL collectives queued and not yet finished: the NCCL stand-in calls
// collective_queued() when it queues one (or, for one recorded into a graph,
// when a replay runs it) and collective_finished() once its task is over,
// run or skipped.
void collective_queued();
void collective_finished();
int64_t collectives_in_flight();
// cudaMalloc, cudaFree, cudaMallocHost/cudaHostAlloc and cudaFreeHost calls
// made while any collective was in flight, since the process started. On a
// GPU such a call can wait for the device while a peer's collective waits
// for this rank (NCCL documents the deadlock), so a training step makes none.
uint64_t allocations_during_collectives();
// Kernel launches accepted since the process started (each LS_LAUNCH that
// passed its checks, captured or not). LOCKSTEP_EMU_REPORT=1 prints both
// counts when the process exits.
uint64_t kernel_launches();

// --- Additions by the runtime (emu/runtime, emu/kernel) ---

// How the threads of a block are scheduled (LOCKSTEP_EMU_ORDER, LOCKSTEP_EMU_SEED
// at start-up; tests may change it). warp_random runs one warp at a time, warps
// (and blocks) in an order drawn from the seed; each launch derives its own
// seed from this one and its launch number, both printed with any failure.
struct Schedule {
  enum class Order { forward, reverse, warp_random };
  Order order = Order::forward;
  uint64_t seed = 0;
};
Schedule schedule();
// Applies to launches made after the call.
void set_schedule(const Schedule& schedule);

}  // namespace lockstep::emu

// The per-thread host synchronisation and host launch counts above, under the
// C names through which a GPU runtime offers them to the engine
// (runtime/host_syncs.cpp looks for them; the CUDA runtime has none).
extern "C" uint64_t lockstep_runtime_host_synchronizations_on_this_thread();
extern "C" uint64_t lockstep_runtime_host_launches_on_this_thread();
