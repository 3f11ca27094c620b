// Memory: device and pinned host memory from the host heap at exact sizes (so
// ASan sees an overrun by one element), tracked per allocation and device;
// copies and memsets that check their pointers as strictly as the kind says.
#include "internal.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <shared_mutex>

namespace lockstep::emu::detail {
namespace {

std::shared_mutex& memory_mutex() {
  static auto* m = new std::shared_mutex;
  return *m;
}
std::map<uintptr_t, Allocation>& allocations() {
  static auto* a = new std::map<uintptr_t, Allocation>;
  return *a;
}

std::optional<Allocation> find_locked(const void* p) {
  auto& all = allocations();
  auto it = all.upper_bound(reinterpret_cast<uintptr_t>(p));
  if (it == all.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second;
  if (reinterpret_cast<uintptr_t>(p) < it->first + a.bytes) return a;
  return std::nullopt;
}

cudaError_t allocate(void** out, size_t bytes, Allocation::Kind kind, int dev) {
  if (!out) return cudaErrorInvalidValue;
  *out = nullptr;
  if (bytes == 0) return cudaSuccess;  // as CUDA: success and a null pointer
  std::unique_lock lock(memory_mutex());
  if (kind == Allocation::Kind::device) {
    size_t& used = device(dev).used;
    if (bytes > memory_capacity() - used) return cudaErrorMemoryAllocation;
    used += bytes;
  }
  void* p = nullptr;
  // 256-byte alignment as cudaMalloc guarantees; the size stays exact.
  if (posix_memalign(&p, 256, bytes) != 0) {
    if (kind == Allocation::Kind::device) device(dev).used -= bytes;
    return cudaErrorMemoryAllocation;
  }
  allocations()[reinterpret_cast<uintptr_t>(p)] = Allocation{p, bytes, dev, kind};
  *out = p;
  return cudaSuccess;
}

cudaError_t release(void* p, Allocation::Kind kind) {
  if (!p) return cudaSuccess;
  std::unique_lock lock(memory_mutex());
  auto it = allocations().find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations().end() || it->second.kind != kind) return cudaErrorInvalidValue;
  if (kind == Allocation::Kind::device) device(it->second.device).used -= it->second.bytes;
  allocations().erase(it);
  std::free(p);
  return cudaSuccess;
}

// Where a copy's pointer points: device memory of some device, pinned or
// pageable host memory. Checks the whole range lies in one allocation.
struct Side {
  bool device = false;
  bool pinned = false;
  int dev = -1;
  bool ok = true;  // the range fits its allocation
};

Side classify(const void* p, size_t bytes) {
  Side s;
  std::shared_lock lock(memory_mutex());
  auto a = find_locked(p);
  if (!a) return s;  // pageable host memory: nothing to check
  s.device = a->kind == Allocation::Kind::device;
  s.pinned = !s.device;
  s.dev = a->device;
  s.ok = static_cast<const char*>(p) + bytes <= static_cast<const char*>(a->base) + a->bytes;
  return s;
}

bool reachable(int from, int dev) {
  if (from == dev) return true;
  std::lock_guard lock(runtime_mutex());
  return device(from).peer[dev];
}

// Checks a copy against its kind and the stream's device.
cudaError_t check_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, int stream_dev, Side& d,
                       Side& s) {
  if (count == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  d = classify(dst, count);
  s = classify(src, count);
  if (!d.ok || !s.ok) return cudaErrorInvalidValue;
  bool want_dst_dev, want_src_dev;
  switch (kind) {
    case cudaMemcpyHostToHost: want_dst_dev = false, want_src_dev = false; break;
    case cudaMemcpyHostToDevice: want_dst_dev = true, want_src_dev = false; break;
    case cudaMemcpyDeviceToHost: want_dst_dev = false, want_src_dev = true; break;
    case cudaMemcpyDeviceToDevice: want_dst_dev = true, want_src_dev = true; break;
    case cudaMemcpyDefault: want_dst_dev = d.device, want_src_dev = s.device; break;
    default: return cudaErrorInvalidMemcpyDirection;
  }
  if (want_dst_dev != d.device || want_src_dev != s.device) return cudaErrorInvalidValue;
  // With unified addressing a copy may name memory of any device, peer access
  // or not (the runtime stages it, as cudaMemcpyPeer documents); only kernels
  // need peer access to read another device's memory.
  (void)stream_dev;
  return cudaSuccess;
}

std::string copy_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return "cudaMemcpy HtoD";
    case cudaMemcpyDeviceToHost: return "cudaMemcpy DtoH";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpy DtoD";
    default: return "cudaMemcpy";
  }
}

// Queues the copy on `stream`. A copy to or from pageable host memory is
// synchronous with respect to the host (CUDA stages it), so it waits, and
// counts as a host synchronisation, unless the stream is capturing.
cudaError_t copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream, bool sync_call) {
  cudaStream_t s = resolve(stream);
  if (!s) return cudaErrorInvalidResourceHandle;
  if (sync_call) {
    if (cudaError_t e = refuse_unsafe_call(); e != cudaSuccess) return e;
  }
  Side d, sr;
  if (cudaError_t e = check_copy(dst, src, count, kind, s->device, d, sr); e != cudaSuccess) return e;
  if (count == 0) return cudaSuccess;
  bool pageable = (!d.device && !d.pinned) || (!sr.device && !sr.pinned);
  bool capturing;
  {
    std::lock_guard lock(runtime_mutex());
    capturing = s->capture != nullptr;
  }
  cudaError_t e = submit(s, Task{copy_name(kind), [dst, src, count] { std::memmove(dst, src, count); }, {}});
  if (e != cudaSuccess) return e;
  bool device_to_device = d.device && sr.device;
  if (!capturing && (sync_call ? !device_to_device : pageable)) {
    drain(s);
    count_host_sync();
    return static_cast<cudaError_t>(device(s->device).sticky.load());
  }
  return cudaSuccess;
}

cudaError_t memset_(void* p, int value, size_t count, cudaStream_t stream, bool sync_call) {
  cudaStream_t s = resolve(stream);
  if (!s) return cudaErrorInvalidResourceHandle;
  if (sync_call) {
    if (cudaError_t e = refuse_unsafe_call(); e != cudaSuccess) return e;
  }
  if (count == 0) return cudaSuccess;
  Side d = classify(p, count);
  if (!p || !d.device || !d.ok || !reachable(s->device, d.dev)) return cudaErrorInvalidValue;
  cudaError_t e = submit(s, Task{"cudaMemset", [p, value, count] { std::memset(p, value, count); }, {}});
  if (e != cudaSuccess || !sync_call) return e;
  drain(s);
  count_host_sync();
  return static_cast<cudaError_t>(device(s->device).sticky.load());
}

}  // namespace
}  // namespace lockstep::emu::detail

namespace lockstep::emu {

std::optional<Allocation> find_allocation(const void* p) {
  std::shared_lock lock(detail::memory_mutex());
  return detail::find_locked(p);
}

bool is_device_range(const void* p, size_t bytes, int dev) {
  auto a = find_allocation(p);
  return a && a->kind == Allocation::Kind::device && a->device == dev &&
         static_cast<const char*>(p) + bytes <= static_cast<const char*>(a->base) + a->bytes;
}

}  // namespace lockstep::emu

using namespace lockstep::emu::detail;
using lockstep::emu::Allocation;
using lockstep::emu::current_device;

extern "C" {

cudaError_t cudaMalloc(void** p, size_t bytes) {
  count_allocation_call();
  if (cudaError_t e = refuse_unsafe_call(); e != cudaSuccess) return record(e);
  return record(allocate(p, bytes, Allocation::Kind::device, current_device()));
}

cudaError_t cudaFree(void* p) {
  count_allocation_call();
  if (cudaError_t e = refuse_unsafe_call(); e != cudaSuccess) return record(e);
  if (p) {
    auto a = lockstep::emu::find_allocation(p);
    if (!a || a->kind != Allocation::Kind::device || a->base != p) return record(cudaErrorInvalidValue);
    // cudaFree synchronises the device: kernels still using the memory finish
    // first. A copy queued on the current device may name memory of another
    // (unified addressing), so the current device is waited for too.
    drain_device(a->device);
    if (current_device() != a->device) drain_device(current_device());
    count_host_sync();
  }
  return record(release(p, Allocation::Kind::device));
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  count_allocation_call();
  return record(allocate(p, bytes, Allocation::Kind::pinned_host, -1));
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int flags) {
  count_allocation_call();
  if (flags & ~(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
    return record(cudaErrorInvalidValue);
  return record(allocate(p, bytes, Allocation::Kind::pinned_host, -1));
}

cudaError_t cudaFreeHost(void* p) {
  count_allocation_call();
  return record(release(p, Allocation::Kind::pinned_host));
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  size_t used;
  {
    std::shared_lock lock(memory_mutex());
    used = device(current_device()).used;
  }
  if (free_bytes) *free_bytes = memory_capacity() - used;
  if (total) *total = memory_capacity();
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return record(copy(dst, src, count, kind, nullptr, true));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return record(copy(dst, src, count, kind, stream, false));
}

cudaError_t cudaMemset(void* p, int value, size_t count) { return record(memset_(p, value, count, nullptr, true)); }

cudaError_t cudaMemsetAsync(void* p, int value, size_t count, cudaStream_t stream) {
  return record(memset_(p, value, count, stream, false));
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* p) {
  if (!attr) return record(cudaErrorInvalidValue);
  std::memset(attr, 0, sizeof *attr);
  auto a = lockstep::emu::find_allocation(p);
  if (!a) {
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = -2;
    return cudaSuccess;
  }
  attr->type = a->kind == Allocation::Kind::device ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
  attr->device = a->kind == Allocation::Kind::device ? a->device : current_device();
  attr->devicePointer = const_cast<void*>(p);
  attr->hostPointer = a->kind == Allocation::Kind::device ? nullptr : const_cast<void*>(p);
  return cudaSuccess;
}

}  // extern "C"
