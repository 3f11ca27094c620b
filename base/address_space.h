#pragma once
// Headroom under the process's address-space limit (ulimit -v, RLIMIT_AS).
// oneDNN 2.6 does not survive a small allocation failing: its objects are
// made with an operator new that returns null, and their constructors then
// write through it (dnnl_memory_create crashed 300 CPU replicas under
// ulimit -v 4000000 about one run in thirty with SIGSEGV). So, under a
// limit, the engine's own large allocations stop short of it by a margin
// (runtime/allocator.cpp, the oneDNN scratch buffers), and a oneDNN call is
// made only while half the margin is left (kernels/cpu/dnnl/conv_dnnl.cpp):
// what runs out then is the engine's, reported as out of memory, never the
// library's. Without a limit (the usual case) nothing is checked: the kernel
// overcommits, and no allocation of that kind fails.
#include <cstddef>

namespace lockstep {

// True when there is no address-space limit, or when `bytes` more would
// still leave `margin_halves` halves of the margin under it (the margin: a
// sixteenth of the limit, at least 64 MiB).
bool address_space_allows(size_t bytes, int margin_halves = 2);

}  // namespace lockstep
