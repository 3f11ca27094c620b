#pragma once
// The CUDA backend's allocators.
//
// Device memory: one caching allocator per GPU. Blocks are rounded up to
// CachingAllocator::bin_size and kept when freed, so the steady state of
// training calls neither cudaMalloc nor cudaFree; current and peak bytes count
// the blocks handed out. When cudaMalloc fails, every cached block is given
// back (cudaFree waits for the device) and the call tried once more; after
// that an Error says how much was asked, how much is in use and cached, what
// the device still has free, and suggests a smaller batch.
//
// Reuse rule (stream safety): a freed block is handed out again only to an
// allocation made by the thread that allocated it first, whichever thread
// frees it. lockstep gives each context one long-lived thread that queues
// all of its work on that context's compute stream, so a block's next user is
// queued behind every earlier use of it on the same stream and needs no
// event. Two consequences for callers:
//  - work on another stream (the communication stream, another context) that
//    reads or writes a block must be finished, or waited for with an event,
//    before the last tensor viewing the block is released; the long-lived
//    arenas that NCCL reduces are not released in the steady state;
//  - the synchronous copies and fills of runtime/memory.h run on the legacy
//    default stream, which the context's (blocking) streams are ordered
//    against, so they are safe from any thread.
//
// Pinned host memory (cudaHostAlloc, portable to every device) is a
// CachingAllocator: a pinned block must stay alive until the asynchronous
// copies that read or write it have finished.
#include <memory>

#include "runtime/allocator.h"

// cuda_allocator_for and cuda_pinned_allocator are declared in
// runtime/allocator.h, which allocator_for and pinned_host_allocator call them from.
