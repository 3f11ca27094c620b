// Errors: the per-thread last error, sticky (asynchronous) errors per device,
// error names and strings, and the host-synchronisation and host-launch counters.
#include "internal.h"

#include <cstdio>
#include <unordered_set>

namespace lockstep::emu::detail {

namespace {
thread_local cudaError_t t_last_error = cudaSuccess;
std::atomic<uint64_t> g_host_syncs{0};
thread_local uint64_t t_host_syncs = 0;
thread_local uint64_t t_host_launches = 0;
}  // namespace

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

void count_host_sync() {
  g_host_syncs.fetch_add(1, std::memory_order_relaxed);
  ++t_host_syncs;
}

void count_host_launch() { ++t_host_launches; }

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace lockstep::emu::detail

namespace lockstep::emu {

void fail_async(int dev, cudaError_t error, const std::string& message) {
  if (!detail::valid_device(dev)) dev = 0;
  int expected = cudaSuccess;
  // The first fault of a device wins, as on a GPU: later ones are consequences.
  if (detail::device(dev).sticky.compare_exchange_strong(expected, error))
    std::fprintf(stderr, "lockstep emulated GPU %d: %s: %s\n", dev, cudaGetErrorName(error), message.c_str());
  else
    std::fprintf(stderr, "lockstep emulated GPU %d (already failed): %s\n", dev, message.c_str());
}

uint64_t host_synchronizations() { return detail::g_host_syncs.load(std::memory_order_relaxed); }

uint64_t host_synchronizations_on_this_thread() { return detail::t_host_syncs; }

uint64_t host_launches_on_this_thread() { return detail::t_host_launches; }

}  // namespace lockstep::emu

uint64_t lockstep_runtime_host_synchronizations_on_this_thread() { return lockstep::emu::detail::t_host_syncs; }

uint64_t lockstep_runtime_host_launches_on_this_thread() { return lockstep::emu::detail::t_host_launches; }

using namespace lockstep::emu::detail;

extern "C" {

cudaError_t cudaGetLastError(void) {
  // A sticky error of the current device is returned and stays.
  int sticky = device(lockstep::emu::current_device()).sticky.load();
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  if (sticky != cudaSuccess) return static_cast<cudaError_t>(sticky);
  return e;
}

cudaError_t cudaPeekAtLastError(void) {
  int sticky = device(lockstep::emu::current_device()).sticky.load();
  if (sticky != cudaSuccess) return static_cast<cudaError_t>(sticky);
  return t_last_error;
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define LS_ERR(name) \
  case name:         \
    return #name;
#include "error_names.inc"
#undef LS_ERR
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  // The runtime's wording for the errors lockstep meets; the name otherwise.
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
    case cudaErrorStreamCaptureIsolation:
      return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    case cudaErrorIllegalState: return "operation not permitted in current state";
    case cudaErrorPeerAccessNotEnabled: return "peer access is not enabled";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    default: return cudaGetErrorName(error);
  }
}

}  // extern "C"
