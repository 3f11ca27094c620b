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
#include <thread>
#include <utility>
#include <vector>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "runtime/cuda/context_streams.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/stream_uses.h"

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

// Waits for events and streams without any allocator lock held (see the
// out-of-memory note in the header); failures are logged, not thrown: the
// caller goes on to give memory back and retry.
void wait_for(const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events) {
  for (cudaStream_t stream : streams) LS_CUDA_LOG(cudaStreamSynchronize(stream));
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
// Every block starts on a multiple of this (cudaMalloc gives 256).
constexpr size_t kAlignment = 512;
// Every block a cudaMalloc of its own, reused only for the same binned size,
// in a build under ASan and wherever LOCKSTEP_CUDA_ALLOCATOR is `per-block`:
// a runtime whose device memory is host memory (the emulated GPU's) gives
// each from the heap with ASan's redzones, and compute-sanitizer's memcheck
// checks each cudaMalloc's bounds, so a
// kernel running off the end of a tensor is reported, which it would not be
// inside a shared segment. (Poisoning free blocks instead would report
// stream-ordered reuse, where a block is freed while queued work on the same
// stream still reads it, as an error.)
bool split_segments() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  static const bool split = !cuda_allocator_per_block_mode(std::getenv("LOCKSTEP_CUDA_ALLOCATOR"));
  return split;
#endif
}

size_t round_up(size_t value, size_t step) { return (value + step - 1) / step * step; }

// The entry of `blocks` (keyed by start address) whose block holds `ptr`, or
// end(): a view into a tensor names its block by an inner address.
template <typename Map, typename SizeOf>
typename Map::iterator block_holding(Map& blocks, const void* ptr, SizeOf size_of) {
  char* p = const_cast<char*>(static_cast<const char*>(ptr));
  auto it = blocks.upper_bound(p);
  if (it == blocks.begin()) return blocks.end();
  --it;
  return p < it->first + size_of(it->second) ? it : blocks.end();
}

// The counts both CUDA allocators keep, under the mutex that guards their state.
class CountingAllocator : public Allocator {
public:
  size_t current_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return current_;
  }
  size_t peak_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

protected:
  void count_handed_out_locked(size_t size) {
    current_ += size;
    if (current_ > peak_) peak_ = current_;
  }
  mutable std::mutex mutex_;
  size_t current_ = 0, peak_ = 0;
};

// A block is a piece of a cudaMalloc'd segment; the blocks of one segment
// form a list in address order, so a freed block finds its free neighbours.
struct Block {
  enum class State { free, allocated, held };
  char* ptr = nullptr;
  size_t size = 0;
  State state = State::free;
  bool small = false;
  std::thread::id owner;  // the thread whose allocations may use the block
  Block* prev = nullptr;
  Block* next = nullptr;
  StreamUses uses;  // streams other than the owner's that used it
  bool whole_segment() const { return !prev && !next; }
};

struct BySize {
  bool operator()(const Block* a, const Block* b) const {
    return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
  }
};
using FreeBlocks = std::set<Block*, BySize>;

struct Pool {  // one thread's free blocks
  FreeBlocks small, large;
  FreeBlocks& of(bool is_small) { return is_small ? small : large; }
};

class CudaDeviceAllocator final : public CountingAllocator {
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
    size_t size = bytes > kHuge ? bytes : round_up(CachingAllocator::bin_size(bytes), kAlignment);
    bool small = size <= kSmallRequest;
    std::unique_lock<std::mutex> lock(mutex_);
    poll_held_locked();
    Block* block = take_free_locked(size, small);
    if (!block) block = new_segment_locked(size, small);
    if (!block && (reserved_ > current_ || !held_.empty())) {
      retry_after_out_of_memory(lock);
      block = take_free_locked(size, small);
      if (!block) block = new_segment_locked(size, small);
    }
    if (!block) fail_out_of_memory(bytes);
    split_locked(block, size);
    block->state = Block::State::allocated;
    live_.emplace(block->ptr, block);
    count_handed_out_locked(block->size);
    return block->ptr;
  }

  void deallocate(void* ptr, size_t /*bytes*/) override {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(static_cast<char*>(ptr));
    if (it == live_.end()) {
      // Called from destructors: report instead of throwing.
      std::fprintf(stderr, "lockstep: cuda:%d allocator asked to free %p, which it did not hand out\n", device_, ptr);
      return;
    }
    Block* block = it->second;
    live_.erase(it);
    current_ -= block->size;
    if (block->uses.empty()) {
      free_block_locked(block);
    } else {
      block->state = Block::State::held;
      held_.push_back(block);
    }
  }

  // False when `ptr` lies in no block this allocator handed out.
  bool record_stream(const void* ptr, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = block_holding(live_, ptr, [](const Block* block) { return block->size; });
    if (it == live_.end()) return false;
    it->second->uses.record(stream, events_);
    return true;
  }

  CudaAllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {reserved_, segments_, held_.size(), oom_retries_};
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
  // Best fit among the calling thread's free blocks of the pool.
  Block* take_free_locked(size_t size, bool small) {
    auto pool = pools_.find(std::this_thread::get_id());
    if (pool == pools_.end()) return nullptr;
    FreeBlocks& blocks = pool->second.of(small);
    Block probe;
    probe.size = size;
    auto it = blocks.lower_bound(&probe);
    if (it == blocks.end() || (!split_segments() && (*it)->size != size)) return nullptr;
    Block* block = *it;
    blocks.erase(it);
    return block;
  }

  // A new segment for the calling thread, as one free block not yet in any
  // pool; nullptr when the device is out of memory.
  Block* new_segment_locked(size_t size, bool small) {
    size_t segment = !split_segments()        ? size
                     : small                   ? kSmallSegment
                     : size <= kMediumRequest ? kMediumSegment
                     : size > kHuge           ? size
                                              : round_up(size, kSegmentRounding);
    void* ptr = raw_allocate(segment);
    if (!ptr && segment > size) ptr = raw_allocate(segment = size);  // what fits rather than nothing
    if (!ptr) return nullptr;
    auto* block = new Block;
    block->ptr = static_cast<char*>(ptr);
    block->size = segment;
    block->small = small;
    block->owner = std::this_thread::get_id();
    reserved_ += segment;
    ++segments_;
    return block;
  }

  // Keeps `size` bytes of `block`; a rest worth keeping becomes a free block.
  void split_locked(Block* block, size_t size) {
    size_t rest = block->size - size;
    if (!split_segments() || rest < (block->small ? kSmallRest : kLargeRest)) return;
    auto* tail = new Block;
    tail->ptr = block->ptr + size;
    tail->size = rest;
    tail->small = block->small;
    tail->owner = block->owner;
    tail->prev = block;
    tail->next = block->next;
    if (block->next) block->next->prev = tail;
    block->next = tail;
    block->size = size;
    pools_[tail->owner].of(tail->small).insert(tail);
  }

  // Marks a block free, merges it with free neighbours and files it in its owner's pool.
  void free_block_locked(Block* block) {
    block->state = Block::State::free;
    FreeBlocks& blocks = pools_[block->owner].of(block->small);
    if (Block* prev = block->prev; prev && prev->state == Block::State::free) {
      blocks.erase(prev);
      absorb_next(prev);
      block = prev;
    }
    if (Block* next = block->next; next && next->state == Block::State::free) {
      blocks.erase(next);
      absorb_next(block);
    }
    blocks.insert(block);
  }

  // `block` takes over the block after it in its segment.
  static void absorb_next(Block* block) {
    Block* next = block->next;
    block->size += next->size;
    block->next = next->next;
    if (next->next) next->next->prev = block;
    delete next;
  }

  // Frees the held blocks whose streams have finished with them; never blocks.
  void poll_held_locked() {
    for (size_t i = 0; i < held_.size();) {
      if (!held_[i]->uses.poll(events_)) {
        ++i;
        continue;
      }
      Block* block = held_[i];
      held_[i] = held_.back();
      held_.pop_back();
      free_block_locked(block);
    }
  }

  // Gives every segment that is one free block back to the device.
  void release_free_segments_locked() {
    DeviceGuard guard(device_);
    for (auto& [owner, pool] : pools_) {
      for (FreeBlocks* blocks : {&pool.small, &pool.large}) {
        for (auto it = blocks->begin(); it != blocks->end();) {
          Block* block = *it;
          if (!block->whole_segment()) {
            ++it;
            continue;
          }
          free_quietly_at_exit(cudaFree, block->ptr, "cudaFree(ptr)");
          reserved_ -= block->size;
          --segments_;
          delete block;
          it = blocks->erase(it);
        }
      }
    }
  }

  // cudaMalloc failed with memory cached: wait, with the mutex released, for
  // this device's context streams (the step's collectives among them) and for
  // the held blocks' events, then give every free segment back. See the
  // header for why the wait comes before cudaFree.
  void retry_after_out_of_memory(std::unique_lock<std::mutex>& lock) {
    ++oom_retries_;
    std::vector<cudaEvent_t> events;
    for (Block* block : held_)
      for (cudaEvent_t event : block->uses.events()) events.push_back(event);
    lock.unlock();
    {
      const BorrowedContextStreams streams(device_);  // none is destroyed while borrowed
      DeviceGuard guard(device_);
      wait_for(streams.streams(), events);
    }
    lock.lock();
    poll_held_locked();
    release_free_segments_locked();
  }

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
            current_, " bytes (", human_bytes(current_), ") in use and ", human_bytes(reserved_ - current_),
            " cached", device_line, "; try a smaller batch (--batch) or a smaller model");
  }

  int device_;
  std::map<std::thread::id, Pool> pools_;
  std::map<char*, Block*> live_;  // handed out, by address (record_stream finds a view's block)
  std::vector<Block*> held_;      // freed, waiting for their streams
  EventPool events_;
  size_t reserved_ = 0, segments_ = 0, oom_retries_ = 0;
};

// Page-locked host memory in CachingAllocator's bins, with the event rule:
// a freed block that an asynchronous copy still reads or writes is held back.
class PinnedHostAllocator final : public CountingAllocator {
public:
  ~PinnedHostAllocator() override { release_cached(); }
  Device device() const override { return Device::cpu(); }

  void* allocate(size_t bytes) override {
    size_t size = CachingAllocator::bin_size(bytes);
    std::unique_lock<std::mutex> lock(mutex_);
    poll_held_locked();
    void* ptr = nullptr;
    if (auto it = free_.find(size); it != free_.end()) {
      ptr = it->second;
      free_.erase(it);
      cached_ -= size;
    } else {
      ptr = raw_allocate(size);
      if (!ptr && (!free_.empty() || !held_.empty())) {
        // Out of memory: wait for the copies of held blocks (unlocked, as the
        // device allocator does), give the cache back and try once more.
        std::vector<cudaEvent_t> events;
        for (auto& [p, block] : held_)
          for (cudaEvent_t event : block.uses.events()) events.push_back(event);
        lock.unlock();
        wait_for({}, events);
        lock.lock();
        poll_held_locked();
        release_free_locked();
        ptr = raw_allocate(size);
      }
      LS_CHECK(ptr != nullptr, "out of pinned host memory: asked for ", bytes, " bytes (", human_bytes(bytes),
               ") with ", human_bytes(current_), " in use; try a smaller batch");
    }
    live_.emplace(static_cast<char*>(ptr), Block{size, {}});
    count_handed_out_locked(size);
    return ptr;
  }

  void deallocate(void* ptr, size_t /*bytes*/) override {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(static_cast<char*>(ptr));
    if (it == live_.end()) {
      std::fprintf(stderr, "lockstep: pinned allocator asked to free %p, which it did not hand out\n", ptr);
      return;
    }
    current_ -= it->second.size;
    cached_ += it->second.size;
    if (it->second.uses.empty())
      free_.emplace(it->second.size, ptr);
    else
      held_.emplace(it->first, std::move(it->second));
    live_.erase(it);
  }

  bool record_stream(const void* ptr, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = block_holding(live_, ptr, [](const Block& block) { return block.size; });
    if (it == live_.end()) return false;
    it->second.uses.record(stream, events_);
    return true;
  }

  size_t held_blocks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_.size();
  }
  size_t cached_bytes() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  void release_cached() override {
    std::lock_guard<std::mutex> lock(mutex_);
    poll_held_locked();
    release_free_locked();
  }

private:
  struct Block {
    size_t size;
    StreamUses uses;
  };

  void poll_held_locked() {
    for (auto it = held_.begin(); it != held_.end();) {
      if (!it->second.uses.poll(events_)) {
        ++it;
        continue;
      }
      free_.emplace(it->second.size, it->first);
      it = held_.erase(it);
    }
  }

  void release_free_locked() {
    for (auto& [size, ptr] : free_) {
      free_quietly_at_exit(cudaFreeHost, ptr, "cudaFreeHost(ptr)");
      cached_ -= size;
    }
    free_.clear();
  }

  static void* raw_allocate(size_t bytes) {
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

  std::multimap<size_t, void*> free_;
  std::map<char*, Block> live_;  // by address, so a view's block is found
  std::map<char*, Block> held_;  // freed, waiting for their copies
  EventPool events_;
  size_t cached_ = 0;
};

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
  table[device] = std::make_shared<CudaDeviceAllocator>(device);
  return table[device];
}

std::shared_ptr<PinnedHostAllocator> pinned_allocator() {
  static auto pinned = std::make_shared<PinnedHostAllocator>();
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

size_t cuda_pinned_held_blocks() { return pinned_allocator()->held_blocks(); }

bool cuda_allocator_splits_segments() { return split_segments(); }

bool cuda_allocator_per_block_mode(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "segments") == 0) return false;
  if (std::strcmp(value, "per-block") == 0) return true;
  LS_FAIL("LOCKSTEP_CUDA_ALLOCATOR=", value, ": expected per-block or segments");
}

}  // namespace lockstep
