#pragma once
// How many loader threads a training process starts when it is not told,
// and how many it may be told to start.
#include <string>

namespace lockstep::data {

// The most loader or decoding threads one process starts: far more than the
// cores of any machine, far fewer than a process's thread limit (about 32,000
// here), whose exhaustion would only be met after thousands had started.
inline constexpr int kMaxLoaderThreads = 1024;

// Throws naming `option` ("--threads") when `threads` is below 1 or above
// kMaxLoaderThreads: checked before any thread or buffer is made.
void check_loader_threads(int threads, const std::string& option);

// `cores`: the host's cores; `processes_on_host`: the training processes
// sharing them; `gpu_replicas`: this process's GPU replicas (0 on the CPU).
//
// A GPU replica leaves the cores free but for the thread that drives it, and
// decoding images is what keeps GPUs waiting, so the loader takes what is
// left of this process's share of the cores: at least 2, at most 32 (past
// that a process is better served by a cache file than by more decoders).
// On the CPU the compute pool already runs on every core: 2 threads (1 on a
// single core), which data held in memory needs for little more than copying,
// and which take only a share of the cores from the step when images are
// decoded in every epoch.
int default_loader_threads(int cores, int processes_on_host, int gpu_replicas);

}  // namespace lockstep::data
