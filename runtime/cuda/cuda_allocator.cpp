// cuda_allocator_for and cuda_pinned_allocator are declared in
// runtime/allocator.h, which allocator_for and pinned_host_allocator call them from.
#include "runtime/cuda/cuda_allocator.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "runtime/cuda/context_streams.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/stream_uses.h"
#include "base/environment.h"

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

// What cudaMalloc or cudaHostAlloc gave: nullptr when the memory ran out (the
// caller may retry), an Error for any other failure.
void* allocated_or_null(cudaError_t status, void* ptr, const char* call) {
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  if (status != cudaSuccess) cuda_detail::throw_status(call, status, __FILE__, __LINE__);
  return ptr;
}

// cudaFree after the runtime has begun unloading (static destructors at exit)
// reports cudaErrorCudartUnloading; the driver reclaims the memory then anyway.
void free_quietly_at_exit(cudaError_t status, const char* call) {
  if (status == cudaErrorCudartUnloading) {
    cudaGetLastError();
    return;
  }
  if (status != cudaSuccess) cuda_detail::log_status(call, status, __FILE__, __LINE__);
}

// Waits for events without any allocator lock held (see the out-of-memory
// note in the header); failures are logged, not thrown: the caller goes on
// to give memory back and retry.
void wait_for(const std::vector<cudaEvent_t>& events) {
  for (cudaEvent_t event : events) LS_CUDA_LOG(cudaEventSynchronize(event));
}

constexpr size_t kMiB = size_t(1) << 20;
// Beyond this the rounding below would wrap; no device has that much anyway.
constexpr size_t kHuge = size_t(1) << 60;
// Requests up to 1 MiB share 2 MiB segments; up to 10 MiB, 20 MiB segments;
// larger ones get a segment of their own rounded to 2 MiB. Small and large
// blocks never share a segment, so a long-lived small tensor cannot pin a
// large segment that the activations of a step need whole.
constexpr size_t kSmallRequest = kMiB, kSmallSegment = 2 * kMiB;
constexpr size_t kMediumRequest = 10 * kMiB, kMediumSegment = 20 * kMiB;
constexpr size_t kSegmentRounding = 2 * kMiB;
// A block is split when at least this much would be left over; a smaller rest
// stays with the block (at most 1 MiB wasted in the large pool).
constexpr size_t kSmallRest = 512, kLargeRest = kMiB;
// Every device block starts on a multiple of this (cudaMalloc gives 256).
constexpr size_t kAlignment = 512;
// Every block a cudaMalloc of its own, reused only for the same binned size,
// in a build under ASan and wherever LOCKSTEP_CUDA_ALLOCATOR is `per-block`:
// a runtime whose device memory is host memory (the emulated GPU's) gives
// each from the heap with ASan's redzones, and compute-sanitizer's memcheck
// checks each cudaMalloc's bounds, so a kernel running off the end of a
// tensor is reported, which it would not be inside a shared segment. (Poisoning free blocks instead would report
// stream-ordered reuse, where a block is freed while queued work on the same
// stream still reads it, as an error.)
bool split_segments() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  static const bool split = [] {
    const std::optional<std::string> mode = environment_value(EnvironmentVariable::cuda_allocator);
    return !cuda_allocator_per_block_mode(mode ? mode->c_str() : nullptr);
  }();
  return split;
#endif
}

size_t round_up(size_t value, size_t step) { return (value + step - 1) / step * step; }

// The memory of one GPU's allocator: cudaMalloc'd segments, split into
// blocks that only the thread which created the segment reuses (the reuse
// rule in the header).
class DeviceMemory {
public:
  static constexpr size_t alignment = kAlignment;

  explicit DeviceMemory(int device) : device_(device) {}
  Device device() const { return Device::cuda(device_); }
  std::string name() const { return "cuda:" + std::to_string(device_); }
  static bool splits() { return split_segments(); }
  static std::thread::id owner() { return std::this_thread::get_id(); }

  void* allocate(size_t bytes) const {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, bytes);
    return allocated_or_null(status, ptr, "cudaMalloc(&ptr, size)");
  }
  void free(void* ptr) const {
    DeviceGuard guard(device_);
    free_quietly_at_exit(cudaFree(ptr), "cudaFree(ptr)");
  }

  // Everything that may still use a held block or hold the device's lock:
  // the context streams of this device (the step's collectives among them)
  // and the held blocks' events. See the header for why the out-of-memory
  // retry waits for them before cudaFree.
  void wait_for_work(const std::vector<cudaEvent_t>& events) const {
    const BorrowedContextStreams streams(device_);  // none is destroyed while borrowed
    DeviceGuard guard(device_);
    for (cudaStream_t stream : streams.streams()) LS_CUDA_LOG(cudaStreamSynchronize(stream));
    wait_for(events);
  }

  [[noreturn]] void fail_out_of_memory(size_t bytes, size_t in_use, size_t cached) const {
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
            in_use, " bytes (", human_bytes(in_use), ") in use and ", human_bytes(cached), " cached", device_line,
            "; try a smaller batch (--batch) or a smaller model");
  }

private:
  int device_;
};

// Page-locked host memory, portable to every device: each block a
// cudaHostAlloc of its own, reused for the same binned size only. Any thread
// may reuse a freed block: the host writes it directly, and every
// asynchronous copy that reads or writes it records its stream.
class PinnedMemory {
public:
  static constexpr size_t alignment = 1;  // never split: each block is a whole cudaHostAlloc

  Device device() const { return Device::cpu(); }
  std::string name() const { return "pinned"; }
  static bool splits() { return false; }
  static std::thread::id owner() { return {}; }

  void* allocate(size_t bytes) const {
    void* ptr = nullptr;
    cudaError_t status = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
    return allocated_or_null(status, ptr, "cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable)");
  }
  void free(void* ptr) const { free_quietly_at_exit(cudaFreeHost(ptr), "cudaFreeHost(ptr)"); }
  // Only the copies of held blocks use pinned memory behind the host's back.
  void wait_for_work(const std::vector<cudaEvent_t>& events) const { wait_for(events); }

  [[noreturn]] void fail_out_of_memory(size_t bytes, size_t in_use, size_t /*cached*/) const {
    LS_FAIL("out of pinned host memory: asked for ", bytes, " bytes (", human_bytes(bytes), ") with ",
            human_bytes(in_use), " in use; try a smaller batch");
  }
};

// The caching allocator over `Memory` (DeviceMemory or PinnedMemory, which
// say where segments come from, whether they are split, which thread may
// reuse a block and how running out is reported). Requests are rounded to
// CachingAllocator's bins and served best-fit from the free blocks of the
// owner's pool; a freed block that other streams still use is held back
// until their events complete (the reuse rule in the header).
template <typename Memory>
class StreamCachingAllocator final : public Allocator {
public:
  explicit StreamCachingAllocator(Memory memory) : memory_(std::move(memory)) {}
  ~StreamCachingAllocator() override {
    // At exit the runtime may be gone before this static; the driver reclaims
    // the memory then, and a destructor must not throw.
    try {
      release_cached();
    } catch (const std::exception&) {
    }
  }

  Device device() const override { return memory_.device(); }

  void* allocate(size_t bytes) override {
    size_t size = bytes > kHuge ? bytes : round_up(CachingAllocator::bin_size(bytes), Memory::alignment);
    bool small = size <= kSmallRequest;
    std::unique_lock<std::mutex> lock(mutex_);
    poll_held_locked();
    auto block = take_free_locked(size, small);
    if (block == blocks_.end()) block = new_segment_locked(size, small);
    if (block == blocks_.end() && (reserved_ > current_ || !held_.empty())) {
      retry_after_out_of_memory(lock);
      block = take_free_locked(size, small);
      if (block == blocks_.end()) block = new_segment_locked(size, small);
    }
    if (block == blocks_.end()) memory_.fail_out_of_memory(bytes, current_, reserved_ - current_);
    split_locked(block, size);
    block->second.state = Block::State::allocated;
    current_ += block->second.size;
    if (current_ > peak_) peak_ = current_;
    return block->first;
  }

  void deallocate(void* ptr, size_t /*bytes*/) override {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(static_cast<char*>(ptr));
    if (it == blocks_.end() || it->second.state != Block::State::allocated) {
      // Called from destructors: report instead of throwing.
      std::fprintf(stderr, "lockstep: %s allocator asked to free %p, which it did not hand out\n",
                   memory_.name().c_str(), ptr);
      return;
    }
    current_ -= it->second.size;
    if (it->second.uses.empty()) {
      free_block_locked(it);
    } else {
      it->second.state = Block::State::held;
      held_.push_back(it);
    }
  }

  // False when `ptr` lies in no block this allocator handed out (a view into
  // a tensor names its block by an inner address).
  bool record_stream(const void* ptr, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    char* p = const_cast<char*>(static_cast<const char*>(ptr));
    auto it = blocks_.upper_bound(p);
    if (it == blocks_.begin()) return false;
    --it;
    if (it->second.state != Block::State::allocated || p >= it->first + it->second.size) return false;
    it->second.uses.record(stream, events_);
    return true;
  }

  CudaAllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {reserved_, segments_, held_.size(), oom_retries_};
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
    return reserved_ - current_;
  }
  void release_cached() override {
    std::lock_guard<std::mutex> lock(mutex_);
    poll_held_locked();
    release_free_segments_locked();
  }

private:
  // A piece of a segment; the blocks of one segment lie next to each other
  // in `blocks_`, so a freed block finds its free neighbours there.
  struct Block {
    enum class State { free, allocated, held };
    size_t size = 0;
    State state = State::free;
    bool small = false;
    std::thread::id owner;  // the thread whose allocations may use the block
    char* segment = nullptr;  // where its segment starts
    size_t segment_size = 0;
    StreamUses uses;  // streams other than the owner's that used it
  };
  using Blocks = std::map<char*, Block>;  // every block, by address
  // One owner's free blocks, smallest first: (size, address).
  using FreeBlocks = std::set<std::pair<size_t, char*>>;
  struct Pool {
    FreeBlocks small, large;
    FreeBlocks& of(bool is_small) { return is_small ? small : large; }
  };

  FreeBlocks& pool_of(const Block& block) { return pools_[block.owner].of(block.small); }
  static bool whole_segment(const Blocks::value_type& block) {
    return block.first == block.second.segment && block.second.size == block.second.segment_size;
  }

  // Best fit among the calling thread's free blocks of the pool, or end().
  typename Blocks::iterator take_free_locked(size_t size, bool small) {
    auto pool = pools_.find(Memory::owner());
    if (pool == pools_.end()) return blocks_.end();
    FreeBlocks& free_blocks = pool->second.of(small);
    auto it = free_blocks.lower_bound({size, nullptr});
    if (it == free_blocks.end() || (!Memory::splits() && it->first != size)) return blocks_.end();
    char* ptr = it->second;
    free_blocks.erase(it);
    return blocks_.find(ptr);
  }

  // A new segment for the calling thread, as one free block not yet in any
  // pool; end() when the memory has run out.
  typename Blocks::iterator new_segment_locked(size_t size, bool small) {
    size_t segment = !Memory::splits()        ? size
                     : small                   ? kSmallSegment
                     : size <= kMediumRequest ? kMediumSegment
                     : size > kHuge           ? size
                                              : round_up(size, kSegmentRounding);
    void* ptr = memory_.allocate(segment);
    if (!ptr && segment > size) ptr = memory_.allocate(segment = size);  // what fits rather than nothing
    if (!ptr) return blocks_.end();
    reserved_ += segment;
    ++segments_;
    char* start = static_cast<char*>(ptr);
    Block block;
    block.size = segment;
    block.small = small;
    block.owner = Memory::owner();
    block.segment = start;
    block.segment_size = segment;
    return blocks_.emplace(start, std::move(block)).first;
  }

  // Keeps `size` bytes of `block`; a rest worth keeping becomes a free block.
  void split_locked(typename Blocks::iterator block, size_t size) {
    size_t rest = block->second.size - size;
    if (!Memory::splits() || rest < (block->second.small ? kSmallRest : kLargeRest)) return;
    Block tail;
    tail.size = rest;
    tail.small = block->second.small;
    tail.owner = block->second.owner;
    tail.segment = block->second.segment;
    tail.segment_size = block->second.segment_size;
    block->second.size = size;
    pool_of(tail).emplace(rest, block->first + size);
    blocks_.emplace_hint(std::next(block), block->first + size, std::move(tail));
  }

  // Whether `it` is a free block of the segment of `block`.
  bool free_in_segment(typename Blocks::iterator it, const Block& block) const {
    return it != blocks_.end() && it->second.segment == block.segment && it->second.state == Block::State::free;
  }

  // Marks a block free, merges it with free neighbours and files it in its owner's pool.
  void free_block_locked(typename Blocks::iterator block) {
    block->second.state = Block::State::free;
    FreeBlocks& free_blocks = pool_of(block->second);
    if (block != blocks_.begin() && free_in_segment(std::prev(block), block->second)) {
      block = std::prev(block);
      free_blocks.erase({block->second.size, block->first});
      absorb_next(block);
    }
    if (auto next = std::next(block); free_in_segment(next, block->second)) {
      free_blocks.erase({next->second.size, next->first});
      absorb_next(block);
    }
    free_blocks.emplace(block->second.size, block->first);
  }

  // `block` takes over the block after it in its segment.
  void absorb_next(typename Blocks::iterator block) {
    auto next = std::next(block);
    block->second.size += next->second.size;
    blocks_.erase(next);
  }

  // Frees the held blocks whose streams have finished with them; never blocks.
  void poll_held_locked() {
    for (size_t i = 0; i < held_.size();) {
      if (!held_[i]->second.uses.poll(events_)) {
        ++i;
        continue;
      }
      auto block = held_[i];
      held_[i] = held_.back();
      held_.pop_back();
      free_block_locked(block);
    }
  }

  // Gives every segment that is one free block back.
  void release_free_segments_locked() {
    for (auto& [owner, pool] : pools_) {
      for (FreeBlocks* free_blocks : {&pool.small, &pool.large}) {
        for (auto it = free_blocks->begin(); it != free_blocks->end();) {
          auto block = blocks_.find(it->second);
          if (!whole_segment(*block)) {
            ++it;
            continue;
          }
          memory_.free(block->first);
          reserved_ -= block->second.size;
          --segments_;
          blocks_.erase(block);
          it = free_blocks->erase(it);
        }
      }
    }
  }

  // The memory ran out with some cached: wait, with the mutex released, for
  // what may still use held blocks, then give every free segment back.
  void retry_after_out_of_memory(std::unique_lock<std::mutex>& lock) {
    ++oom_retries_;
    std::vector<cudaEvent_t> events;
    for (auto block : held_)
      for (cudaEvent_t event : block->second.uses.events()) events.push_back(event);
    lock.unlock();
    memory_.wait_for_work(events);
    lock.lock();
    poll_held_locked();
    release_free_segments_locked();
  }

  const Memory memory_;
  mutable std::mutex mutex_;
  Blocks blocks_;
  std::map<std::thread::id, Pool> pools_;
  std::vector<typename Blocks::iterator> held_;  // freed, waiting for their streams
  EventPool events_;
  size_t current_ = 0, peak_ = 0, reserved_ = 0, segments_ = 0, oom_retries_ = 0;
};

using CudaDeviceAllocator = StreamCachingAllocator<DeviceMemory>;
using PinnedHostAllocator = StreamCachingAllocator<PinnedMemory>;

std::shared_ptr<CudaDeviceAllocator> device_allocator(int device) {
  static std::mutex mutex;
  static std::array<std::shared_ptr<CudaDeviceAllocator>, 64> table;
  std::lock_guard<std::mutex> lock(mutex);
  if (device >= 0 && device < static_cast<int>(table.size()) && table[device]) return table[device];
  int count = cuda_device_count();
  std::string visible = count == 0 ? "no CUDA device is visible (no GPU or no driver)"
                                   : std::to_string(count) + " CUDA device(s) are visible";
  LS_CHECK(device >= 0 && device < count && device < static_cast<int>(table.size()), "cuda:", device,
           " asked for, but ", visible);
  table[device] = std::make_shared<CudaDeviceAllocator>(DeviceMemory(device));
  return table[device];
}

std::shared_ptr<PinnedHostAllocator> pinned_allocator() {
  static auto pinned = std::make_shared<PinnedHostAllocator>(PinnedMemory());
  return pinned;
}

}  // namespace

std::shared_ptr<Allocator> cuda_allocator_for(int device) { return device_allocator(device); }

std::shared_ptr<Allocator> cuda_pinned_allocator() { return pinned_allocator(); }

namespace {
// Work recorded into a CUDA graph is not a use yet: CUDA refuses to query an
// event recorded during a capture (cudaErrorCapturedEvent), and a graph
// joins its other streams back into the capturing one before it ends, so its
// uses are ordered before whatever that stream runs after each launch.
bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}
}  // namespace

bool cuda_record_pinned_use(const void* ptr, cudaStream_t stream) {
  if (!ptr || capturing(stream)) return false;
  return pinned_allocator()->record_stream(ptr, stream);
}

void cuda_record_stream(const void* ptr, cudaStream_t stream) {
  if (!ptr || capturing(stream) || cuda_record_pinned_use(ptr, stream)) return;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    cudaGetLastError();  // not memory CUDA knows: nothing to track
    return;
  }
  if (attributes.type == cudaMemoryTypeDevice) device_allocator(attributes.device)->record_stream(ptr, stream);
}

CudaAllocatorStats cuda_allocator_stats(int device) { return device_allocator(device)->stats(); }

size_t cuda_pinned_held_blocks() { return pinned_allocator()->stats().held_blocks; }

bool cuda_allocator_splits_segments() { return split_segments(); }

bool cuda_allocator_per_block_mode(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "segments") == 0) return false;
  if (std::strcmp(value, "per-block") == 0) return true;
  LS_FAIL("LOCKSTEP_CUDA_ALLOCATOR=", value, ": expected per-block or segments");
}

}  // namespace lockstep
