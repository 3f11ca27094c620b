#pragma once
// The CPU backend's one pool of compute threads. Every parallel CPU loop of
// lockstep (convolution, GEMM, batch-norm, pooling, element-wise, optimizer)
// runs on it, and OpenBLAS is held to one thread per call so its own threads
// never spin against ours (measured: about 30% of cycles went to OpenBLAS's
// pthread build yielding between sgemm calls on 2 cores).
//
// With oneDNN built in (LOCKSTEP_WITH_DNNL), the pool's threads are the
// OpenMP team oneDNN's convolutions run on, so one set of threads serves
// both; otherwise they are the pool's own.
//
// parallel_for() splits a range into at most compute_threads() contiguous
// parts; the calling thread runs part 0 and the pool's threads the rest. A
// call made from inside a parallel region, or while another thread (another
// replica, an emulated device) holds the pool, runs every part on the caller
// in order, so nested and concurrent use is safe and never oversubscribes.
#include <algorithm>
#include <cstdint>
#include <functional>

namespace lockstep::cpu {

// Threads that work on one parallel region, the caller included (>= 1).
// Default: the LOCKSTEP_CPU_THREADS environment variable, else the number of
// hardware threads.
int compute_threads();
// Resizes the pool (threads >= 1; 1 runs everything on the caller). Must not
// be called while a parallel region runs.
void set_compute_threads(int threads);

// Runs body(begin, end, part) over [0, n) split into `parts` contiguous ranges,
// parts = clamp(n / min_per_part, 1, compute_threads()), part in [0, parts).
// Returns when every part is done; rethrows the first exception of a part.
using RangeBody = std::function<void(int64_t begin, int64_t end, int part)>;
void parallel_for(int64_t n, int64_t min_per_part, const RangeBody& body);

// True on a thread that is running a part of a parallel region.
bool in_parallel_region();

// Elements per part below which an element-wise loop stays on one thread.
inline constexpr int64_t element_grain = int64_t(1) << 15;

// Runs body(i) for every i in [0, n), where one i costs about
// `work_per_item` element operations, in parts of at least element_grain.
template <class Body>
void parallel_items(int64_t n, int64_t work_per_item, Body body) {
  const int64_t min_items = std::max<int64_t>(1, element_grain / std::max<int64_t>(1, work_per_item));
  parallel_for(n, min_items, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) body(i);
  });
}
template <class Body>
void parallel_elements(int64_t n, Body body) {
  parallel_items(n, 1, body);
}

// The number of parts parallel_for(n, min_per_part, ...) uses when it runs on
// the pool (callers size per-part scratch with it).
int parallel_parts(int64_t n, int64_t min_per_part);

}  // namespace lockstep::cpu
