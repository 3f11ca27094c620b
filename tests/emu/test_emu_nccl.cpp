// The emulated NCCL: ranks are threads of this process on distinct emulated
// devices and meet on their streams. All-reduce (sum in rank order, several
// types) and broadcast against direct references, init by unique id, group
// calls from one thread, argument checks, and the planted bug of two ranks
// calling collectives in different orders: they stay blocked (as on GPUs)
// until a watchdog aborts, and then both streams finish. This proves the
// stand-in's semantics, not NCCL's transport or performance.
#include <catch2/catch.hpp>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "emu_runtime.h"  // lockstep_emu_interface exports emu/runtime

// Catch2's assertions are not thread-safe, and per_rank asserts on one thread
// per rank: every assertion here records its result under one lock
// (ThreadSanitizer reported the race in Catch::RunContext::assertionPassed).
// The expression is evaluated before the lock is taken: a collective inside
// it waits for the other ranks, which must be free to assert meanwhile.
static std::mutex catch_mutex;
#define LOCKED_ASSERT(MACRO, ...)                          \
  do {                                                     \
    const bool locked_ok = static_cast<bool>(__VA_ARGS__); \
    std::lock_guard<std::mutex> catch_lock(catch_mutex);   \
    INFO(#__VA_ARGS__);                                    \
    MACRO(locked_ok);                                      \
  } while (0)
#define REQUIRE_LOCKED(...) LOCKED_ASSERT(REQUIRE, __VA_ARGS__)
#define CHECK_LOCKED(...) LOCKED_ASSERT(CHECK, __VA_ARGS__)

namespace {

const int kDevicesSet = (setenv("LOCKSTEP_EMU_DEVICES", "4", 0), 0);

bool enough_devices(int n) {
  if (lockstep::emu::device_count() >= n) return true;
  WARN("needs " << n << " emulated devices (LOCKSTEP_EMU_DEVICES); skipped");
  return false;
}

template <typename T> T* device_copy(const std::vector<T>& v) {
  void* p = nullptr;
  REQUIRE_LOCKED(cudaMalloc(&p, v.size() * sizeof(T)) == cudaSuccess);
  REQUIRE_LOCKED(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return static_cast<T*>(p);
}

template <typename T> std::vector<T> host_copy(const T* p, size_t n) {
  std::vector<T> v(n);
  REQUIRE_LOCKED(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}

uint16_t bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return uint16_t(bits >> 16);  // exact for the values used here
}

// One communicator over devices 0..n-1 by ncclCommInitAll.
std::vector<ncclComm_t> init_all(int n) {
  std::vector<ncclComm_t> comms(size_t(n), nullptr);
  std::vector<int> devices;
  for (int d = 0; d < n; ++d) devices.push_back(d);
  REQUIRE_LOCKED(ncclCommInitAll(comms.data(), n, devices.data()) == ncclSuccess);
  return comms;
}

// A communicator over devices 0..n-1 and, per rank, a stream (created with
// `flags`) and `count` floats of value rank + 1 on the rank's device.
struct RankSetup {
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<float*> bufs;
};
RankSetup ranks_with_buffers(int n, size_t count, unsigned flags) {
  RankSetup s{init_all(n), std::vector<cudaStream_t>(size_t(n)), std::vector<float*>(size_t(n))};
  for (int r = 0; r < n; ++r) {
    REQUIRE_LOCKED(cudaSetDevice(r) == cudaSuccess);
    REQUIRE_LOCKED(cudaStreamCreateWithFlags(&s.streams[size_t(r)], flags) == cudaSuccess);
    s.bufs[size_t(r)] = device_copy(std::vector<float>(count, float(r + 1)));
  }
  return s;
}

// Runs f(rank) on one thread per rank with the rank's device current.
template <typename F> void per_rank(int n, F f) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      f(r);
    });
  for (auto& t : threads) t.join();
}

}  // namespace

TEST_CASE("emulated nccl: all-reduce sums in rank order on 2 and 4 ranks, several types", "[emu][nccl]") {
  for (int n : {2, 4}) {
    if (!enough_devices(n)) continue;
    INFO(n << " ranks");
    auto comms = init_all(n);
    const size_t count = 1000;
    // Rank-order float sums: ((v0 + v1) + v2) + v3 with values whose order matters.
    std::vector<std::vector<float>> floats(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) floats[size_t(r)].push_back(r % 2 ? 1.0f + float(i) : (r ? -1e8f : 1e8f));
    std::vector<float> want(count);
    for (size_t i = 0; i < count; ++i) {
      float acc = floats[0][i];
      for (int r = 1; r < n; ++r) acc += floats[size_t(r)][i];
      want[i] = acc;
    }
    std::vector<std::vector<float>> got(static_cast<size_t>(n));
    std::vector<std::vector<double>> got_d(static_cast<size_t>(n));
    std::vector<std::vector<int32_t>> got_i(static_cast<size_t>(n));
    std::vector<std::vector<int64_t>> got_l(static_cast<size_t>(n));
    std::vector<std::vector<uint16_t>> got_b(static_cast<size_t>(n));
    std::atomic<int> failures{0};
    per_rank(n, [&](int r) {
      cudaStream_t stream;
      cudaStreamCreate(&stream);
      float* f = device_copy(floats[size_t(r)]);  // in place
      double* d_in = device_copy(std::vector<double>(count, 0.25 * (r + 1)));
      double* d_out = device_copy(std::vector<double>(count, -1.0));
      int32_t* i32 = device_copy(std::vector<int32_t>(count, r + 1));
      int64_t* i64 = device_copy(std::vector<int64_t>(count, int64_t(1) << (40 + r)));
      uint16_t* b = device_copy(std::vector<uint16_t>(count, bf16(1.5f)));
      auto* c = comms[size_t(r)];
      failures += ncclAllReduce(f, f, count, ncclFloat, ncclSum, c, stream) != ncclSuccess;
      failures += ncclAllReduce(d_in, d_out, count, ncclDouble, ncclSum, c, stream) != ncclSuccess;
      failures += ncclAllReduce(i32, i32, count, ncclInt32, ncclSum, c, stream) != ncclSuccess;
      failures += ncclAllReduce(i64, i64, count, ncclInt64, ncclSum, c, stream) != ncclSuccess;
      failures += ncclAllReduce(b, b, count, ncclBfloat16, ncclSum, c, stream) != ncclSuccess;
      failures += cudaStreamSynchronize(stream) != cudaSuccess;
      got[size_t(r)] = host_copy(f, count);
      got_d[size_t(r)] = host_copy(d_out, count);
      got_i[size_t(r)] = host_copy(i32, count);
      got_l[size_t(r)] = host_copy(i64, count);
      got_b[size_t(r)] = host_copy(b, count);
      for (void* p : {(void*)f, (void*)d_in, (void*)d_out, (void*)i32, (void*)i64, (void*)b}) cudaFree(p);
      cudaStreamDestroy(stream);
    });
    REQUIRE_LOCKED(failures == 0);
    int64_t want_l = 0;
    for (int r = 0; r < n; ++r) want_l += int64_t(1) << (40 + r);
    for (int r = 0; r < n; ++r) {
      CHECK_LOCKED(got[size_t(r)] == want);  // bit-identical on every rank
      CHECK_LOCKED(got_d[size_t(r)] == std::vector<double>(count, 0.25 * n * (n + 1) / 2));
      CHECK_LOCKED(got_i[size_t(r)] == std::vector<int32_t>(count, n * (n + 1) / 2));
      CHECK_LOCKED(got_l[size_t(r)] == std::vector<int64_t>(count, want_l));
      CHECK_LOCKED(got_b[size_t(r)] == std::vector<uint16_t>(count, bf16(1.5f * n)));
    }
    for (auto c : comms) REQUIRE_LOCKED(ncclCommDestroy(c) == ncclSuccess);
  }
}

TEST_CASE("emulated nccl: ranks meet by unique id, count, rank and broadcast", "[emu][nccl]") {
  const int n = 2;
  if (!enough_devices(n)) return;
  ncclUniqueId id;
  REQUIRE_LOCKED(ncclGetUniqueId(&id) == ncclSuccess);
  std::vector<ncclComm_t> comms(n);
  std::vector<std::vector<float>> got(n);
  std::vector<int> sizes(n), ranks(n);
  std::atomic<int> failures{0};
  per_rank(n, [&](int r) {
    failures += ncclCommInitRank(&comms[size_t(r)], n, id, r) != ncclSuccess;
    ncclCommCount(comms[size_t(r)], &sizes[size_t(r)]);
    ncclCommUserRank(comms[size_t(r)], &ranks[size_t(r)]);
    float* buf = device_copy(std::vector<float>(5, float(10 * (r + 1))));
    failures += ncclBroadcast(buf, buf, 5, ncclFloat, 1, comms[size_t(r)], nullptr) != ncclSuccess;
    failures += cudaDeviceSynchronize() != cudaSuccess;
    got[size_t(r)] = host_copy(buf, 5);
    cudaFree(buf);
  });
  REQUIRE_LOCKED(failures == 0);
  for (int r = 0; r < n; ++r) {
    CHECK_LOCKED(sizes[size_t(r)] == n);
    CHECK_LOCKED(ranks[size_t(r)] == r);
    CHECK_LOCKED(got[size_t(r)] == std::vector<float>(5, 20.0f));  // root 1's values
    ncclCommDestroy(comms[size_t(r)]);
  }
}

TEST_CASE("emulated nccl: group calls let one thread drive every rank", "[emu][nccl]") {
  const int n = 2;
  if (!enough_devices(n)) return;
  auto [comms, streams, bufs] = ranks_with_buffers(n, 3, cudaStreamDefault);
  REQUIRE_LOCKED(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; ++r)
    REQUIRE_LOCKED(ncclAllReduce(bufs[size_t(r)], bufs[size_t(r)], 3, ncclFloat, ncclSum, comms[size_t(r)],
                          streams[size_t(r)]) == ncclSuccess);
  REQUIRE_LOCKED(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < n; ++r) {
    REQUIRE_LOCKED(cudaSetDevice(r) == cudaSuccess);
    REQUIRE_LOCKED(cudaStreamSynchronize(streams[size_t(r)]) == cudaSuccess);
    CHECK_LOCKED(host_copy(bufs[size_t(r)], 3) == std::vector<float>(3, 3.0f));
  }
  // Outside a group the same thread may not issue for a second rank (NCCL
  // documents that this can deadlock).
  REQUIRE_LOCKED(cudaSetDevice(0) == cudaSuccess);
  REQUIRE_LOCKED(ncclAllReduce(bufs[0], bufs[0], 3, ncclFloat, ncclSum, comms[0], streams[0]) == ncclSuccess);
  REQUIRE_LOCKED(cudaSetDevice(1) == cudaSuccess);
  CHECK_LOCKED(ncclAllReduce(bufs[1], bufs[1], 3, ncclFloat, ncclSum, comms[1], streams[1]) == ncclInvalidUsage);
  CHECK_LOCKED(ncclGroupEnd() == ncclInvalidUsage);  // no group open
  // Release rank 0's lone collective, then clean up.
  REQUIRE_LOCKED(ncclCommAbort(comms[0]) == ncclSuccess);
  REQUIRE_LOCKED(ncclCommAbort(comms[1]) == ncclSuccess);
  for (int r = 0; r < n; ++r) {
    REQUIRE_LOCKED(cudaSetDevice(r) == cudaSuccess);
    REQUIRE_LOCKED(cudaStreamSynchronize(streams[size_t(r)]) == cudaSuccess);
    cudaFree(bufs[size_t(r)]);
    cudaStreamDestroy(streams[size_t(r)]);
  }
  REQUIRE_LOCKED(cudaSetDevice(0) == cudaSuccess);

  // InitRank of every rank from one thread inside a group.
  ncclUniqueId id;
  REQUIRE_LOCKED(ncclGetUniqueId(&id) == ncclSuccess);
  std::vector<ncclComm_t> ranked(n);
  REQUIRE_LOCKED(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; ++r) {
    REQUIRE_LOCKED(cudaSetDevice(r) == cudaSuccess);
    REQUIRE_LOCKED(ncclCommInitRank(&ranked[size_t(r)], n, id, r) == ncclSuccess);
  }
  REQUIRE_LOCKED(ncclGroupEnd() == ncclSuccess);
  REQUIRE_LOCKED(cudaSetDevice(0) == cudaSuccess);
  for (auto c : ranked) REQUIRE_LOCKED(ncclCommDestroy(c) == ncclSuccess);
}

TEST_CASE("emulated nccl: argument checks", "[emu][nccl]") {
  CHECK_LOCKED(ncclCommInitAll(nullptr, -1, nullptr) != ncclSuccess);
  int version = 0;
  REQUIRE_LOCKED(ncclGetVersion(&version) == ncclSuccess);
  CHECK_LOCKED(version == NCCL_VERSION_CODE);
  if (!enough_devices(2)) return;
  ncclComm_t dup[2];
  const int same[2] = {1, 1};
  CHECK_LOCKED(ncclCommInitAll(dup, 2, same) == ncclInvalidUsage);  // one GPU per rank
  auto comms = init_all(2);
  std::vector<float> host(4);
  REQUIRE_LOCKED(cudaSetDevice(0) == cudaSuccess);
  float* mine = device_copy(host);
  CHECK_LOCKED(ncclAllReduce(host.data(), host.data(), 4, ncclFloat, ncclSum, comms[0], nullptr) == ncclInvalidArgument);
  CHECK_LOCKED(ncclAllReduce(mine, mine, 5, ncclFloat, ncclSum, comms[0], nullptr) == ncclInvalidArgument);  // overrun
  CHECK_LOCKED(ncclAllReduce(mine, mine, 4, ncclFloat, ncclSum, comms[1], nullptr) == ncclInvalidArgument);  // device 0 memory, rank on 1
  CHECK_LOCKED(ncclAllReduce(mine, mine, 2, ncclHalf, ncclSum, comms[0], nullptr) == ncclInvalidArgument);
  CHECK_LOCKED(ncclBroadcast(mine, mine, 4, ncclFloat, 2, comms[0], nullptr) == ncclInvalidArgument);
  ncclResult_t async = ncclInternalError;
  REQUIRE_LOCKED(ncclCommGetAsyncError(comms[0], &async) == ncclSuccess);
  CHECK_LOCKED(async == ncclSuccess);
  for (auto c : comms) REQUIRE_LOCKED(ncclCommDestroy(c) == ncclSuccess);
  CHECK_LOCKED(ncclCommGetAsyncError(comms[0], &async) == ncclInvalidArgument);  // destroyed: refused, not read
  cudaFree(mine);
}

TEST_CASE("emulated nccl: collectives in different orders block until a watchdog aborts", "[emu][nccl][failure]") {
  const int n = 2;
  if (!enough_devices(n)) return;
  auto comms = init_all(n);
  const size_t count = 8;
  std::atomic<int> finished{0};
  std::vector<std::vector<float>> after(n);
  std::vector<cudaError_t> sync(n, cudaErrorUnknown);
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      cudaSetDevice(r);
      cudaStream_t stream;
      cudaStreamCreate(&stream);
      float* buf = device_copy(std::vector<float>(count, float(r + 1)));
      // The planted bug: rank 0 reduces then broadcasts, rank 1 the reverse.
      if (r == 0) {
        ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comms[0], stream);
        ncclBroadcast(buf, buf, count, ncclFloat, 0, comms[0], stream);
      } else {
        ncclBroadcast(buf, buf, count, ncclFloat, 0, comms[1], stream);
        ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comms[1], stream);
      }
      sync[size_t(r)] = cudaStreamSynchronize(stream);
      after[size_t(r)] = host_copy(buf, count);
      ++finished;
      cudaFree(buf);
      cudaStreamDestroy(stream);
    });
  // The watchdog: nothing may finish on its own; the hang is silent (no
  // async error yet), as NCCL's would be.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_LOCKED(finished == 0);
  ncclResult_t async = ncclInternalError;
  REQUIRE_LOCKED(ncclCommGetAsyncError(comms[1], &async) == ncclSuccess);
  CHECK_LOCKED(async == ncclSuccess);
  const auto abort_at = std::chrono::steady_clock::now();
  REQUIRE_LOCKED(ncclCommAbort(comms[0]) == ncclSuccess);
  // The surviving rank learns why its collectives cannot complete.
  REQUIRE_LOCKED(ncclCommGetAsyncError(comms[1], &async) == ncclSuccess);
  CHECK_LOCKED(async == ncclInvalidUsage);
  REQUIRE_LOCKED(ncclCommAbort(comms[1]) == ncclSuccess);
  while (finished < n && std::chrono::steady_clock::now() - abort_at < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE_LOCKED(finished == n);  // released within seconds, not hung
  for (auto& t : ranks) t.join();
  for (int r = 0; r < n; ++r) {
    CHECK_LOCKED(sync[size_t(r)] == cudaSuccess);  // the streams end; the error is the communicator's
    CHECK_LOCKED(after[size_t(r)] == std::vector<float>(count, float(r + 1)));  // nothing was written
  }
}

TEST_CASE("emulated nccl: allocations made while a collective is in flight are counted", "[emu][nccl]") {
  const int n = 2;
  if (!enough_devices(n)) return;
  auto [comms, streams, bufs] = ranks_with_buffers(n, 4, cudaStreamNonBlocking);
  REQUIRE_LOCKED(lockstep::emu::collectives_in_flight() == 0);
  const uint64_t before = lockstep::emu::allocations_during_collectives();
  // Rank 0 alone: its all-reduce waits on its stream for rank 1, in flight.
  REQUIRE_LOCKED(cudaSetDevice(0) == cudaSuccess);
  REQUIRE_LOCKED(ncclAllReduce(bufs[0], bufs[0], 4, ncclFloat, ncclSum, comms[0], streams[0]) == ncclSuccess);
  REQUIRE_LOCKED(lockstep::emu::collectives_in_flight() == 1);
  // Rank 1's thread allocates and frees before it joins: both counted.
  std::thread rank1([&] {
    REQUIRE_LOCKED(cudaSetDevice(1) == cudaSuccess);
    void* p = nullptr;
    REQUIRE_LOCKED(cudaMalloc(&p, 256) == cudaSuccess);
    REQUIRE_LOCKED(cudaFree(p) == cudaSuccess);
    REQUIRE_LOCKED(lockstep::emu::allocations_during_collectives() == before + 2);
    REQUIRE_LOCKED(ncclAllReduce(bufs[1], bufs[1], 4, ncclFloat, ncclSum, comms[1], streams[1]) == ncclSuccess);
  });
  rank1.join();
  void* p = nullptr;
  for (int r = 0; r < n; ++r) {
    REQUIRE_LOCKED(cudaSetDevice(r) == cudaSuccess);
    REQUIRE_LOCKED(cudaStreamSynchronize(streams[size_t(r)]) == cudaSuccess);
  }
  // Finished: its task is gone once the stream has passed it (the worker
  // drops it right after), so wait for the count to settle.
  for (int i = 0; i < 1000 && lockstep::emu::collectives_in_flight() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE_LOCKED(lockstep::emu::collectives_in_flight() == 0);
  REQUIRE_LOCKED(cudaMalloc(&p, 256) == cudaSuccess);
  REQUIRE_LOCKED(cudaFree(p) == cudaSuccess);
  CHECK_LOCKED(lockstep::emu::allocations_during_collectives() == before + 2);
  for (int r = 0; r < n; ++r) {
    REQUIRE_LOCKED(cudaSetDevice(r) == cudaSuccess);
    CHECK_LOCKED(host_copy(bufs[size_t(r)], 4) == std::vector<float>(4, 3.0f));
    cudaFree(bufs[size_t(r)]);
    cudaStreamDestroy(streams[size_t(r)]);
    ncclCommDestroy(comms[size_t(r)]);
  }
  REQUIRE_LOCKED(cudaSetDevice(0) == cudaSuccess);
}
