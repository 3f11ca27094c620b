// Devices: how many there are (LOCKSTEP_EMU_DEVICES), the calling thread's
// current device, properties and attributes (plausible values; the name says
// "emulated" so nothing reports an emulated run as a GPU), peer access.
#include "internal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lockstep::emu::detail {

namespace {
int parse_device_count() {
  const char* env = std::getenv("LOCKSTEP_EMU_DEVICES");
  if (!env || !*env) return 1;
  char* end = nullptr;
  long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 1 || n > kMaxDevices) {
    long used = (*end != '\0' || n < 1) ? 1 : kMaxDevices;
    std::fprintf(stderr, "lockstep-emu: LOCKSTEP_EMU_DEVICES=%s is not a count from 1 to %d; using %ld\n", env,
                 kMaxDevices, used);
    return static_cast<int>(used);
  }
  return static_cast<int>(n);
}
thread_local int t_current_device = 0;
}  // namespace

std::mutex& runtime_mutex() {
  static auto* m = new std::mutex;  // never destroyed: workers may outlive static destruction
  return *m;
}

Device& device(int id) {
  static auto* devices = new Device[kMaxDevices];
  return devices[id];
}

bool valid_device(int id) { return id >= 0 && id < lockstep::emu::device_count(); }

size_t memory_capacity() {
  static const size_t capacity = [] {
    const char* env = std::getenv("LOCKSTEP_EMU_MEMORY");
    if (env && *env) return static_cast<size_t>(std::strtoull(env, nullptr, 10));
    return size_t(16) << 30;
  }();
  return capacity;
}

}  // namespace lockstep::emu::detail

namespace lockstep::emu {
int device_count() {
  static const int n = detail::parse_device_count();
  return n;
}
int current_device() { return detail::t_current_device; }
}  // namespace lockstep::emu

using namespace lockstep::emu::detail;
using lockstep::emu::device_count;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return record(cudaErrorInvalidValue);
  *count = device_count();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) {
  if (!valid_device(dev)) return record(cudaErrorInvalidDevice);
  t_current_device = dev;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* dev) {
  if (!dev) return record(cudaErrorInvalidValue);
  *dev = t_current_device;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* v) {
  if (!v) return record(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* v) {
  if (!v) return record(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int dev) {
  if (!p) return record(cudaErrorInvalidValue);
  if (!valid_device(dev)) return record(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "lockstep emulated GPU (CPU)");
  p->totalGlobalMem = memory_capacity();
  p->sharedMemPerBlock = 48 << 10;
  p->sharedMemPerBlockOptin = 48 << 10;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->regsPerBlock = 65536;
  p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->memPitch = SIZE_MAX;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->totalConstMem = 64 << 10;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->multiProcessorCount = 4;
  p->integrated = 0;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->pciBusID = dev + 1;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50 << 20;
  p->maxThreadsPerMultiProcessor = 2048;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = 1;
  p->localL1CacheSupported = 1;
  p->managedMemory = 0;
  p->isMultiGpuBoard = 0;
  p->maxBlocksPerMultiProcessor = 32;
  p->reservedSharedMemPerBlock = 1024;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int dev) {
  if (!value) return record(cudaErrorInvalidValue);
  if (!valid_device(dev)) return record(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMemoryClockRate: *value = 2619000; break;  // kHz
    case cudaDevAttrClockRate: *value = 1980000; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = 5120; break;
    case cudaDevAttrMultiProcessorCount: *value = 4; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxBlockDimX: *value = 1024; break;
    case cudaDevAttrMaxBlockDimY: *value = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *value = 64; break;
    case cudaDevAttrMaxGridDimX: *value = 0x7fffffff; break;
    case cudaDevAttrMaxGridDimY: *value = 65535; break;
    case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 << 10; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = 48 << 10; break;
    case cudaDevAttrL2CacheSize: *value = 50 << 20; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
    case cudaDevAttrUnifiedAddressing: *value = 1; break;
    case cudaDevAttrConcurrentKernels: *value = 1; break;
    case cudaDevAttrAsyncEngineCount: *value = 2; break;
    case cudaDevAttrStreamPrioritiesSupported: *value = 1; break;
    case cudaDevAttrCanMapHostMemory: *value = 1; break;
    case cudaDevAttrPciBusId: *value = dev + 1; break;
    case cudaDevAttrIntegrated: *value = 0; break;
    default: *value = 0; break;
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  // As on current GPUs: 0 is the lowest priority, -5 the highest.
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int dev, int peer) {
  if (!can) return record(cudaErrorInvalidValue);
  if (!valid_device(dev) || !valid_device(peer)) return record(cudaErrorInvalidDevice);
  *can = dev != peer ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  if (flags != 0) return record(cudaErrorInvalidValue);
  if (!valid_device(peer) || peer == t_current_device) return record(cudaErrorInvalidDevice);
  std::lock_guard lock(runtime_mutex());
  bool& enabled = device(t_current_device).peer[peer];
  if (enabled) return record(cudaErrorPeerAccessAlreadyEnabled);
  enabled = true;
  return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  if (!valid_device(peer)) return record(cudaErrorInvalidDevice);
  std::lock_guard lock(runtime_mutex());
  bool& enabled = device(t_current_device).peer[peer];
  if (!enabled) return record(cudaErrorPeerAccessNotEnabled);
  enabled = false;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  if (cudaError_t e = refuse_unsafe_call(); e != cudaSuccess) return record(e);
  int dev = t_current_device;
  drain_device(dev);
  count_host_sync();
  return record(static_cast<cudaError_t>(device(dev).sticky.load()));
}

// Waits for the device, then clears its sticky error (so one test's planted
// fault does not poison the next). Unlike CUDA it keeps streams, events and
// allocations: the process's handles stay valid.
cudaError_t cudaDeviceReset(void) {
  int dev = t_current_device;
  drain_device(dev);
  device(dev).sticky.store(cudaSuccess);
  return cudaSuccess;
}

}  // extern "C"
