#include <catch2/catch.hpp>

#include <spawn.h>
#include <sys/wait.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/cuda/cuda_allocator.h"
#include "runtime/cuda/cuda_memory.h"
#include "runtime/memory.h"
#include "runtime/tensor.h"

using namespace lockstep;

extern char** environ;

TEST_CASE("gpu allocator reuses a freed block of the same bin without growing", "[gpu][allocator]") {
  auto alloc = allocator_for(Device::cuda(0));
  REQUIRE(alloc->device() == Device::cuda(0));
  REQUIRE(alloc == cuda_allocator_for(0));  // one allocator per device
  const size_t bytes = 3 * 1000 * 1000 + 7;
  size_t before = alloc->current_bytes();
  void* a = alloc->allocate(bytes);
  REQUIRE(alloc->current_bytes() == before + CachingAllocator::bin_size(bytes));
  alloc->deallocate(a, bytes);
  REQUIRE(alloc->current_bytes() == before);
  size_t cached = alloc->cached_bytes();
  REQUIRE(cached >= CachingAllocator::bin_size(bytes));
  // A size in the same bin gets the same block back from the cache.
  void* b = alloc->allocate(bytes - 5);
  REQUIRE(b == a);
  REQUIRE(alloc->cached_bytes() == cached - CachingAllocator::bin_size(bytes));
  alloc->deallocate(b, bytes - 5);
}

TEST_CASE("gpu allocator keeps current and peak bytes", "[gpu][allocator]") {
  auto alloc = cuda_allocator_for(0);
  size_t base = alloc->current_bytes();
  size_t big = size_t(64) << 20, small = 4096;
  void* a = alloc->allocate(big);
  void* b = alloc->allocate(small);
  size_t both = CachingAllocator::bin_size(big) + CachingAllocator::bin_size(small);
  REQUIRE(alloc->current_bytes() == base + both);
  REQUIRE(alloc->peak_bytes() >= base + both);
  alloc->deallocate(a, big);
  REQUIRE(alloc->current_bytes() == base + CachingAllocator::bin_size(small));
  REQUIRE(alloc->peak_bytes() >= base + both);  // the peak remembers
  alloc->deallocate(b, small);
  REQUIRE(alloc->current_bytes() == base);
  alloc->release_cached();
  REQUIRE(alloc->cached_bytes() == 0);
}

TEST_CASE("gpu allocator reports an absurd request as out of memory with advice", "[gpu][allocator]") {
  auto alloc = cuda_allocator_for(0);
  const size_t absurd = size_t(1) << 50;  // a pebibyte
  REQUIRE_THROWS_WITH(alloc->allocate(absurd), Catch::Contains("out of memory on cuda:0") &&
                                                   Catch::Contains("asked for 1125899906842624 bytes") &&
                                                   Catch::Contains("in use") && Catch::Contains("smaller batch"));
  // Still usable afterwards.
  void* p = alloc->allocate(1024);
  REQUIRE(p != nullptr);
  alloc->deallocate(p, 1024);
}

TEST_CASE("gpu allocator hands a freed block only to the thread that allocated it", "[gpu][allocator]") {
  auto alloc = cuda_allocator_for(0);
  const size_t bytes = size_t(5) << 20;
  void* mine = alloc->allocate(bytes);
  alloc->deallocate(mine, bytes);
  void* theirs = nullptr;
  std::thread other([&] { theirs = alloc->allocate(bytes); });
  other.join();
  REQUIRE(theirs != mine);
  void* again = alloc->allocate(bytes);
  REQUIRE(again == mine);
  // Freed here, the other thread's block still belongs to that thread's pool.
  alloc->deallocate(theirs, bytes);
  alloc->deallocate(again, bytes);
}

TEST_CASE("gpu pinned allocator gives host memory that round-trips through the device", "[gpu][allocator]") {
  auto pinned = pinned_host_allocator();
  REQUIRE(pinned == cuda_pinned_allocator());
  REQUIRE(pinned->device() == Device::cpu());
  Tensor host = Tensor::empty_with(Shape{1000}, pinned);
  std::vector<float> values(1000);
  for (int i = 0; i < 1000; ++i) values[i] = 0.5f * i - 3.0f;
  std::memcpy(host.data(), values.data(), 1000 * sizeof(float));
  Tensor device = host.to(Device::cuda(0));
  Tensor back = Tensor::empty_with(Shape{1000}, pinned);
  back.copy_from(device);
  REQUIRE(std::memcmp(back.data(), values.data(), 1000 * sizeof(float)) == 0);
}

TEST_CASE("gpu pinned allocator hands a freed block to any thread, never split", "[gpu][allocator]") {
  auto pinned = cuda_pinned_allocator();
  const size_t bytes = 3000;
  void* mine = pinned->allocate(bytes);
  REQUIRE(pinned->current_bytes() >= CachingAllocator::bin_size(bytes));
  pinned->deallocate(mine, bytes);
  // Unlike a device block, a pinned one is not kept for the thread that allocated it.
  void* theirs = nullptr;
  std::thread other([&] { theirs = pinned->allocate(bytes); });
  other.join();
  CHECK(theirs == mine);
  // A smaller request is not cut from a larger free block.
  pinned->deallocate(theirs, bytes);
  void* small = pinned->allocate(100);
  CHECK(small != mine);
  pinned->deallocate(small, 100);
}

TEST_CASE("gpu copies and fills move every byte between host and devices", "[gpu][memory]") {
  std::vector<float> values(12345);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f;
  Tensor a = Tensor::from_vector(Shape{12345}, values, Device::cuda(0));
  Tensor b = Tensor::empty(Shape{12345}, Device::cuda(0));
  b.copy_from(a);  // device to device
  REQUIRE(b.to_vector() == values);
  Tensor part = b.view(3, Shape{100});
  part.zero();
  std::vector<float> expected = values;
  std::fill(expected.begin() + 3, expected.begin() + 103, 0.0f);
  REQUIRE(b.to_vector() == expected);
  // Stream-ordered forms.
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  cuda_zero_bytes_async(a.data(), 16, stream);
  std::vector<float> host(12345);
  cuda_copy_bytes_async(host.data(), a.data(), host.size() * sizeof(float), stream);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
  std::fill(values.begin(), values.begin() + 4, 0.0f);
  REQUIRE(host == values);
}

TEST_CASE("gpu tensors on a device that does not exist are refused by name", "[gpu][allocator]") {
  REQUIRE_THROWS_WITH(Tensor::empty(Shape{4}, Device::cuda(63)), Catch::Contains("cuda:63"));
}

TEST_CASE("LOCKSTEP_CUDA_ALLOCATOR selects per-block or segments and refuses anything else",
          "[gpu][allocator]") {
  CHECK_FALSE(cuda_allocator_per_block_mode(nullptr));
  CHECK_FALSE(cuda_allocator_per_block_mode(""));
  CHECK_FALSE(cuda_allocator_per_block_mode("segments"));
  CHECK(cuda_allocator_per_block_mode("per-block"));
  CHECK_THROWS_WITH(cuda_allocator_per_block_mode("per_block"),
                    Catch::Contains("LOCKSTEP_CUDA_ALLOCATOR=per_block") && Catch::Contains("per-block or segments"));
}

// Run by the next test in a child process started with
// LOCKSTEP_CUDA_ALLOCATOR=per-block (the mode is read once per process).
TEST_CASE("gpu allocator in per-block mode gives every block a cudaMalloc of its own",
          "[.][allocator-per-block]") {
  REQUIRE_FALSE(cuda_allocator_splits_segments());
  auto alloc = cuda_allocator_for(0);
  alloc->release_cached();
  const CudaAllocatorStats before = cuda_allocator_stats(0);
  // Two small blocks: with segments they would share one 2 MiB segment.
  void* a = alloc->allocate(1000);
  void* b = alloc->allocate(1000);
  CHECK(cuda_allocator_stats(0).segments == before.segments + 2);
  CHECK(cuda_allocator_stats(0).reserved_bytes == before.reserved_bytes + 2 * 1024);
  alloc->deallocate(b, 1000);
  // A freed block serves its own binned size only: a larger request gets a new one...
  void* c = alloc->allocate(3000);
  CHECK(c != b);
  CHECK(cuda_allocator_stats(0).segments == before.segments + 3);
  // ...and the same size gets it back.
  void* d = alloc->allocate(1000);
  CHECK(d == b);
  CHECK(cuda_allocator_stats(0).segments == before.segments + 3);
  for (auto [p, n] : {std::pair<void*, size_t>{a, 1000}, {c, 3000}, {d, 1000}}) alloc->deallocate(p, n);
  alloc->release_cached();
  CHECK(cuda_allocator_stats(0).segments == before.segments);
}

TEST_CASE("a process started with LOCKSTEP_CUDA_ALLOCATOR=per-block allocates every block alone",
          "[gpu][allocator]") {
  std::vector<std::string> env_text{"LOCKSTEP_CUDA_ALLOCATOR=per-block"};
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "LOCKSTEP_CUDA_ALLOCATOR=", 24) != 0) env_text.emplace_back(*e);
  std::vector<char*> env;
  for (std::string& e : env_text) env.push_back(e.data());
  env.push_back(nullptr);
  std::string self = "/proc/self/exe", spec = "[allocator-per-block]", warn = "--warn", no_tests = "NoTests";
  std::vector<char*> argv{self.data(), spec.data(), warn.data(), no_tests.data(), nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), env.data()) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
