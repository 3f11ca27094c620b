#pragma once
// Memory allocators. A CachingAllocator keeps freed blocks in size bins and
// hands them out again, so the steady state of training makes no system
// allocation; current and peak bytes say what is in use and what was at most.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "runtime/device.h"

namespace lockstep {

class Allocator {
public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr, size_t bytes) = 0;
  virtual Device device() const = 0;
  virtual size_t current_bytes() const = 0;  // handed out and not yet returned
  virtual size_t peak_bytes() const = 0;     // the most ever handed out at once
  virtual size_t cached_bytes() const = 0;   // freed blocks kept for reuse
  virtual void release_cached() = 0;         // give cached blocks back to the system
};

// Size-binned caching over a raw allocate/free pair; thread-safe.
class CachingAllocator : public Allocator {
public:
  ~CachingAllocator() override;
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;
  size_t current_bytes() const override;
  size_t peak_bytes() const override;
  size_t cached_bytes() const override;
  void release_cached() override;
  // Blocks are rounded up so that nearby sizes share a bin (at most 1/8 wasted).
  static size_t bin_size(size_t bytes);

protected:
  virtual void* raw_allocate(size_t bytes) = 0;  // returns nullptr when out of memory
  virtual void raw_free(void* ptr) = 0;
  // Called by derived destructors: raw_free must not run after they are gone.
  void release_all_cached_locked_free();

private:
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_blocks_;
  size_t current_ = 0, peak_ = 0, cached_ = 0;
};

// Ordinary host memory, 64-byte aligned.
class HostAllocator final : public CachingAllocator {
public:
  ~HostAllocator() override;
  Device device() const override { return Device::cpu(); }

protected:
  void* raw_allocate(size_t bytes) override;
  void raw_free(void* ptr) override;
};

// The process's allocator for a device (one per device, created on first use).
std::shared_ptr<Allocator> allocator_for(Device device);
// Page-locked host memory for batches copied to a GPU; plain host memory
// when the build or the machine has no GPU.
std::shared_ptr<Allocator> pinned_host_allocator();

#if LOCKSTEP_WITH_CUDA
// The CUDA backend's allocators, behind the two above: declared here and
// defined in runtime/cuda/cuda_allocator.cpp, so allocator.cpp needs no CUDA
// header.
// The caching allocator of GPU `device`, created on first use. Throws an Error
// naming the device when it does not exist.
std::shared_ptr<Allocator> cuda_allocator_for(int device);
// The process's page-locked host allocator (tensors on Device::cpu()).
std::shared_ptr<Allocator> cuda_pinned_allocator();
#endif

}  // namespace lockstep
