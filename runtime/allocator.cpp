#include "runtime/allocator.h"

#include <cstdlib>
#include <new>
#include <vector>

#include "base/address_space.h"
#include "base/error.h"

namespace lockstep {

size_t CachingAllocator::bin_size(size_t bytes) {
  if (bytes <= 512) return 512;
  // Round up to a multiple of 1/8 of the next lower power of two.
  size_t power = 1;
  while (power * 2 <= bytes) power *= 2;
  size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

CachingAllocator::~CachingAllocator() = default;

void* CachingAllocator::allocate(size_t bytes) {
  size_t size = bin_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* ptr = nullptr;
  auto it = free_blocks_.find(size);
  if (it != free_blocks_.end()) {
    ptr = it->second;
    free_blocks_.erase(it);
    cached_ -= size;
  } else {
    ptr = raw_allocate(size);
    if (!ptr && cached_ > 0) {  // out of memory: give the cache back and try once more
      for (auto& [s, p] : free_blocks_) raw_free(p);
      free_blocks_.clear();
      cached_ = 0;
      ptr = raw_allocate(size);
    }
    LS_CHECK(ptr != nullptr, "out of memory on ", device().str(), ": asked for ", bytes, " bytes with ",
             current_, " bytes in use; try a smaller batch (or, on the CPU, fewer replicas)");
  }
  current_ += size;
  if (current_ > peak_) peak_ = current_;
  return ptr;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (!ptr) return;
  size_t size = bin_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  current_ -= size;
  // Called from destructors (a tensor's storage): it must not throw. Keeping
  // the block takes a node of the free list, which a process out of memory
  // cannot have (std::bad_alloc here ended 300 CPU replicas under ulimit -v
  // in std::terminate instead of the out-of-memory error): the block goes
  // back to the system instead.
  try {
    free_blocks_.emplace(size, ptr);
  } catch (const std::bad_alloc&) {
    raw_free(ptr);
    return;
  }
  cached_ += size;
}

size_t CachingAllocator::current_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}
size_t CachingAllocator::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}
size_t CachingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [s, p] : free_blocks_) raw_free(p);
  free_blocks_.clear();
  cached_ = 0;
}

void CachingAllocator::release_all_cached_locked_free() { release_cached(); }

HostAllocator::~HostAllocator() { release_all_cached_locked_free(); }

void* HostAllocator::raw_allocate(size_t bytes) {
  // Under ulimit -v the tensors stop a margin short of the limit, which is
  // left to libraries that cannot survive running out (base/address_space.h).
  if (!address_space_allows(bytes)) return nullptr;
  return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
}
void HostAllocator::raw_free(void* ptr) { std::free(ptr); }

std::shared_ptr<Allocator> allocator_for(Device device) {
  if (device.is_cpu()) {
    static auto host = std::make_shared<HostAllocator>();
    return host;
  }
#if LOCKSTEP_WITH_CUDA
  return cuda_allocator_for(device.index);
#else
  LS_FAIL("device ", device.str(), " asked for, but this build has no CUDA backend");
#endif
}

std::shared_ptr<Allocator> pinned_host_allocator() {
#if LOCKSTEP_WITH_CUDA
  if (cuda_device_count() > 0) return cuda_pinned_allocator();
#endif
  return allocator_for(Device::cpu());
}

}  // namespace lockstep
