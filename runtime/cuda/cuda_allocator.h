#pragma once
// The CUDA backend's allocators.
//
// Device memory: one caching allocator per GPU. Requests are rounded up to
// CachingAllocator::bin_size and served best-fit from segments obtained with
// cudaMalloc: requests up to 1 MiB from 2 MiB segments, requests up to 10 MiB
// from 20 MiB segments, larger ones from a segment of their own (rounded to
// 2 MiB). A block is split when the rest is worth keeping and coalesced with
// free neighbours when freed, so shapes that vary from step to step (the last
// partial batch, evaluation, uneven splits) reuse the same segments instead of
// adding a segment per size. The steady state of training calls neither
// cudaMalloc nor cudaFree; current and peak bytes count the blocks handed out.
// When cudaMalloc fails the allocator retries once after giving back every
// free segment (see "Out of memory" below); after that an Error says how much
// was asked, how much is in use and cached, what the device still has free,
// and suggests a smaller batch.
//
// Reuse rule (stream safety). Two parts:
//  - A free block is handed out again only to an allocation made by the
//    thread that created its segment, whichever thread frees it. lockstep
//    gives each context one long-lived thread that queues all of its work on
//    that context's compute stream, so a block's next user is queued behind
//    every earlier use of it on the same stream and needs no event. This is
//    kept rather than per-stream pools because Allocator::allocate takes no
//    stream: the thread is the only thing that names the stream it serves.
//  - Work on any other stream (the communication stream, a copy stream,
//    another context) that reads or writes a block must be announced with
//    cuda_record_stream(ptr, stream) right after it is queued. That records
//    an event on the stream; when the block is freed it is held back, neither
//    handed out nor coalesced, until every such event has completed (polled
//    with cudaEventQuery on later calls; the allocator never blocks for it
//    except in the out-of-memory retry). Pinned host blocks follow the same
//    rule for the asynchronous copies that read or write them, so a host
//    buffer is never refilled while a copy from it is in flight.
//  The synchronous copies and fills of runtime/memory.h run on a per-device
//  non-blocking copy stream that first waits, by events, for everything
//  queued so far on the streams of every context of the devices they touch,
//  and return only once done (runtime/cuda/cuda_memory.h): earlier users of a
//  block are ordered before them, later ones after, so they need no record.
//  No stream lockstep creates is ordered against the legacy default stream,
//  and lockstep queues nothing on it. The batch slots the copy stream fills
//  ahead of a step (distributed/batch_staging.h) are freed only after the
//  compute stream has waited for the copies queued into them; the pinned
//  blocks they are copied from are recorded by cuda_copy_bytes_async.
//
// Out of memory. cudaFree synchronises the whole device and takes a
// device-wide lock; if this device's communication stream holds a collective
// whose peers have not launched theirs yet, and a peer's thread needs that
// lock (cudaMalloc, cudaFree) or this allocator's mutex before launching, the
// two wait for each other. So the retry first waits, without holding the
// allocator's mutex, for every context stream of this device
// (runtime/cuda/context_streams.h) and for the events of held-back blocks; only then does it cudaFree the free segments, with nothing of this
// device's left in flight for cudaFree to wait on.
//
// Pinned host memory (cudaHostAlloc, portable to every device) is served by
// the same allocator with every block allocated alone and reused for its
// binned size only (as LOCKSTEP_CUDA_ALLOCATOR=per-block does for devices),
// by any thread, with the event rule above.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "runtime/allocator.h"

namespace lockstep {

// Announces that work just queued on `stream` reads or writes the memory at
// `ptr` (anywhere inside a block of a device allocator or of the pinned
// allocator). After the block is freed it is not handed out again until that
// work is done. Call it with the stream's device current. Memory that no
// lockstep allocator handed out (pageable host memory, a raw cudaMalloc) is
// ignored: its owner keeps it alive.
void cuda_record_stream(const void* ptr, cudaStream_t stream);
// The same for pinned host memory only, cheap enough for every asynchronous
// copy to call on both its ends: a map look-up, and an event record when `ptr`
// is pinned. (Recording a device block on its owner's own stream would only
// delay its reuse.) Returns whether `ptr` is in a pinned block. Both record
// nothing while `stream` is capturing a CUDA graph (runtime/step_graph.h):
// such work runs at the graph's launches, ordered within the graph, and CUDA
// refuses to query an event recorded in a capture.
bool cuda_record_pinned_use(const void* ptr, cudaStream_t stream);

// What a device allocator holds, for tests and diagnostics.
struct CudaAllocatorStats {
  size_t reserved_bytes = 0;  // in segments obtained from cudaMalloc
  size_t segments = 0;        // cudaMalloc calls not yet freed
  size_t held_blocks = 0;     // freed, waiting for events on other streams
  size_t oom_retries = 0;     // out-of-memory retries so far
};
CudaAllocatorStats cuda_allocator_stats(int device);
// Freed pinned blocks still waiting for their copies.
size_t cuda_pinned_held_blocks();
// False where every block is a cudaMalloc of its own so that overruns are
// reported (see cuda_allocator.cpp): on the emulated device under ASan, and
// in a process started with LOCKSTEP_CUDA_ALLOCATOR=per-block (for
// compute-sanitizer's memcheck).
bool cuda_allocator_splits_segments();
// What LOCKSTEP_CUDA_ALLOCATOR's value asks for: true for `per-block`, false
// when unset, empty or `segments` (the default); anything else throws,
// naming the variable.
bool cuda_allocator_per_block_mode(const char* value);

}  // namespace lockstep
