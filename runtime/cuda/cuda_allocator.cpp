#include "runtime/cuda/cuda_allocator.h"

#include <cuda_runtime_api.h>

#include <array>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "base/error.h"

namespace lockstep {
namespace {

std::string human_bytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

// cudaFree after the runtime has begun unloading (static destructors at exit)
// reports cudaErrorCudartUnloading; the driver reclaims the memory then anyway.
template <typename Free> void free_quietly_at_exit(Free free_call, void* ptr, const char* call) {
  cudaError_t status = free_call(ptr);
  if (status == cudaErrorCudartUnloading) {
    cudaGetLastError();
    return;
  }
  if (status != cudaSuccess) cuda_detail::log_status(call, status, __FILE__, __LINE__);
}

class CudaDeviceAllocator final : public Allocator {
public:
  explicit CudaDeviceAllocator(int device) : device_(device) {}
  ~CudaDeviceAllocator() override {
    // At exit the runtime may be gone before this static; the driver reclaims
    // the memory then, and a destructor must not throw.
    try {
      release_cached();
    } catch (const std::exception&) {
    }
  }

  Device device() const override { return Device::cuda(device_); }

  void* allocate(size_t bytes) override {
    // Beyond this the bin arithmetic would wrap; no device has that much anyway.
    size_t size = bytes > (size_t(1) << 60) ? bytes : CachingAllocator::bin_size(bytes);
    Key key{std::this_thread::get_id(), size};
    std::lock_guard<std::mutex> lock(mutex_);
    void* ptr = nullptr;
    auto it = free_.find(key);
    if (it != free_.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      cached_ -= size;
    } else {
      ptr = raw_allocate(size);
      if (!ptr && cached_ > 0) {
        release_cached_locked();
        ptr = raw_allocate(size);
      }
      if (!ptr) fail_out_of_memory(bytes);
    }
    live_.emplace(ptr, Key{key.owner, size});
    current_ += size;
    if (current_ > peak_) peak_ = current_;
    return ptr;
  }

  void deallocate(void* ptr, size_t /*bytes*/) override {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) {
      // Called from destructors: report instead of throwing.
      std::fprintf(stderr, "lockstep: cuda:%d allocator asked to free %p, which it did not hand out\n", device_, ptr);
      return;
    }
    Key key = it->second;
    live_.erase(it);
    free_[key].push_back(ptr);
    current_ -= key.size;
    cached_ += key.size;
  }

  size_t current_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return current_;
  }
  size_t peak_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }
  size_t cached_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  void release_cached() override {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached_locked();
  }

private:
  struct Key {
    std::thread::id owner;  // the thread whose allocations may reuse the block
    size_t size;            // the block's binned size
    bool operator<(const Key& o) const { return owner != o.owner ? owner < o.owner : size < o.size; }
  };

  // Returns nullptr when the device is out of memory; throws on any other failure.
  void* raw_allocate(size_t size) {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, size);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    if (status != cudaSuccess) cuda_detail::throw_status("cudaMalloc(&ptr, size)", status, __FILE__, __LINE__);
    return ptr;
  }

  // cudaFree waits for the device, so blocks still read by queued work on any
  // stream are safe to give back here.
  void release_cached_locked() {
    DeviceGuard guard(device_);
    for (auto& [key, blocks] : free_)
      for (void* ptr : blocks) free_quietly_at_exit(cudaFree, ptr, "cudaFree(ptr)");
    free_.clear();
    cached_ = 0;
  }

  [[noreturn]] void fail_out_of_memory(size_t bytes) {
    size_t free_bytes = 0, total_bytes = 0;
    std::string device_line;
    {
      DeviceGuard guard(device_);
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
        device_line = "; the device has " + human_bytes(free_bytes) + " free of " + human_bytes(total_bytes);
      else
        cudaGetLastError();
    }
    LS_FAIL("out of memory on cuda:", device_, ": asked for ", bytes, " bytes (", human_bytes(bytes), ") with ",
            current_, " bytes (", human_bytes(current_), ") in use", device_line,
            "; try a smaller batch (--batch) or a smaller model");
  }

  int device_;
  mutable std::mutex mutex_;
  std::map<Key, std::vector<void*>> free_;
  std::unordered_map<void*, Key> live_;
  size_t current_ = 0, peak_ = 0, cached_ = 0;
};

class PinnedHostAllocator final : public CachingAllocator {
public:
  ~PinnedHostAllocator() override { release_all_cached_locked_free(); }
  Device device() const override { return Device::cpu(); }

protected:
  void* raw_allocate(size_t bytes) override {
    void* ptr = nullptr;
    cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    if (status != cudaSuccess)
      cuda_detail::throw_status("cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable)", status, __FILE__, __LINE__);
    return ptr;
  }
  void raw_free(void* ptr) override { free_quietly_at_exit(cudaFreeHost, ptr, "cudaFreeHost(ptr)"); }
};

}  // namespace

std::shared_ptr<Allocator> cuda_allocator_for(int device) {
  static std::mutex mutex;
  static std::array<std::shared_ptr<Allocator>, 64> table;
  std::lock_guard<std::mutex> lock(mutex);
  if (device >= 0 && device < static_cast<int>(table.size()) && table[device]) return table[device];
  int count = cuda_device_count();
  std::string visible = count == 0 ? "no CUDA device is visible (no GPU or no driver)"
                                   : std::to_string(count) + " CUDA device(s) are visible";
  LS_CHECK(device >= 0 && device < count && device < static_cast<int>(table.size()), "cuda:", device,
           " asked for, but ", visible);
  table[device] = std::make_shared<CudaDeviceAllocator>(device);
  return table[device];
}

std::shared_ptr<Allocator> cuda_pinned_allocator() {
  static auto pinned = std::make_shared<PinnedHostAllocator>();
  return pinned;
}

}  // namespace lockstep
