#include "kernels/cpu/thread_pool.h"
#include "base/environment.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if LOCKSTEP_WITH_DNNL
#include <omp.h>
#endif

namespace lockstep::cpu {

namespace {

int default_threads() {
  if (const std::optional<std::string> env = environment_value(EnvironmentVariable::cpu_threads)) {
    char* end = nullptr;
    long v = std::strtol(env->c_str(), &end, 10);
    if (*end != '\0' || v < 1 || v > 4096)
      throw std::invalid_argument(std::string("LOCKSTEP_CPU_THREADS=") + *env + ": expected a thread count from 1 to 4096");
    return static_cast<int>(v);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// A short busy wait before sleeping: the next region of a training step
// usually starts within microseconds, and a futex wake costs about as much as
// a small loop. Bounded, so an idle pool sleeps instead of burning a core.
constexpr int spin_rounds = 2000;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

template <class T, class Pred>
void spin_then_wait(std::atomic<T>& value, Pred done) {
  for (int i = 0; i < spin_rounds; ++i) {
    if (done(value.load(std::memory_order_acquire))) return;
    relax();
  }
  for (T seen = value.load(std::memory_order_acquire); !done(seen); seen = value.load(std::memory_order_acquire))
    value.wait(seen, std::memory_order_acquire);
}

thread_local bool inside_region = false;

// OpenBLAS gets one thread per call: the pool's parts call it side by side.
// Set while the program loads, before any thread exists: changing OpenBLAS's
// thread count while another thread is inside a threaded sgemm (an emulated
// device's cuBLAS, say) corrupts that product.
const bool blas_single_threaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

// Runs part `part` of [0, n) split into `parts`, marked as a region; the
// first exception of any part is kept in `error`.
void run_range_part(const RangeBody& body, int64_t n, int part, int parts, std::mutex& error_mutex,
              std::exception_ptr& error) {
  inside_region = true;
  try {
    body(n * part / parts, n * (part + 1) / parts, part);
  } catch (...) {
    std::lock_guard g(error_mutex);
    if (!error) error = std::current_exception();
  }
  inside_region = false;
}

#if LOCKSTEP_WITH_DNNL
// With oneDNN built in, the pool's threads are OpenMP's, the ones oneDNN's
// convolutions run on: two teams of threads would take turns, each spinning
// on the cores the other needs after its own region (a resnet20 step at 2
// threads went from 148 ms on 1 thread to only 120-143 ms). One team runs
// both, and its threads find the next region, ours or oneDNN's, while they spin.
class Pool {
public:
  explicit Pool(int threads) : threads_(threads) {}
  int threads() const { return threads_; }

  bool try_run(int64_t n, int parts, const RangeBody& body) {
    std::unique_lock lock(busy_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    std::exception_ptr error;
    std::mutex error_mutex;
#pragma omp parallel num_threads(parts)
    {
      // OpenMP may give fewer threads than asked for: each takes every team-th part.
      const int team = omp_get_num_threads();
      for (int part = omp_get_thread_num(); part < parts; part += team)
        run_range_part(body, n, part, parts, error_mutex, error);
    }
    if (error) std::rethrow_exception(error);
    return true;
  }

private:
  const int threads_;
  std::mutex busy_;
};
#else
class Pool {
public:
  explicit Pool(int threads) : threads_(threads) {
    for (int w = 1; w < threads_; ++w) workers_.emplace_back([this, w] { work(w); });
  }
  ~Pool() {
    stop_.store(true, std::memory_order_release);
    state_.fetch_add(uint64_t(1) << part_bits, std::memory_order_acq_rel);
    state_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int threads() const { return threads_; }

  // False when the pool is busy with another caller's region.
  bool try_run(int64_t n, int parts, const RangeBody& body) {
    std::unique_lock lock(busy_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    body_ = &body;
    n_ = n;
    error_ = nullptr;
    pending_.store(parts - 1, std::memory_order_relaxed);
    // The part count travels in the same word as the generation, so a worker
    // that sits this region out reads nothing else of it.
    const uint64_t generation = (state_.load(std::memory_order_relaxed) >> part_bits) + 1;
    state_.store(generation << part_bits | uint64_t(parts), std::memory_order_release);
    state_.notify_all();
    run_part(0, parts);
    spin_then_wait(pending_, [](int left) { return left == 0; });
    body_ = nullptr;
    if (error_) std::rethrow_exception(error_);
    return true;
  }

private:
  static constexpr int part_bits = 16;  // threads are at most 4096

  void work(int w) {
    uint64_t seen = 0;
    while (true) {
      spin_then_wait(state_, [&](uint64_t s) { return s != seen; });
      seen = state_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) return;
      const int parts = static_cast<int>(seen & ((uint64_t(1) << part_bits) - 1));
      if (w < parts) {
        run_part(w, parts);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
      }
    }
  }

  void run_part(int part, int parts) { run_range_part(*body_, n_, part, parts, error_mutex_, error_); }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex busy_;
  std::atomic<uint64_t> state_{0};  // generation << part_bits | parts
  std::atomic<int> pending_{0};      // parts of the region not finished yet
  std::atomic<bool> stop_{false};
  // The region in progress: written before state_ is published, untouched
  // until every part that reads it has finished.
  const RangeBody* body_ = nullptr;
  int64_t n_ = 0;
  std::mutex error_mutex_;
  std::exception_ptr error_;
};
#endif

std::mutex pool_mutex;
std::unique_ptr<Pool> pool;  // created on first use

Pool& the_pool() {
  std::lock_guard g(pool_mutex);
  if (!pool) pool = std::make_unique<Pool>(default_threads());
  return *pool;
}

}  // namespace

bool in_parallel_region() { return inside_region; }

int compute_threads() { return the_pool().threads(); }

void set_compute_threads(int threads) {
  if (threads < 1) throw std::invalid_argument("compute threads: " + std::to_string(threads) + "; at least 1");
  std::lock_guard g(pool_mutex);
  if (pool && pool->threads() == threads) return;
  pool.reset();
  pool = std::make_unique<Pool>(threads);
}

int parallel_parts(int64_t n, int64_t min_per_part) {
  const int64_t by_size = n / std::max<int64_t>(1, min_per_part);
  return static_cast<int>(std::clamp<int64_t>(by_size, 1, compute_threads()));
}

void parallel_for(int64_t n, int64_t min_per_part, const RangeBody& body) {
  if (n <= 0) return;
  const int parts = parallel_parts(n, min_per_part);
  if (parts > 1 && !inside_region && the_pool().try_run(n, parts, body)) return;
  // One part, a nested call, or the pool busy with another thread's region:
  // the same parts, in order, on this thread, and marked as a region, so that
  // what they call splits its work exactly as it would inside the pool (a
  // GEMM split differently rounds differently; an emulated device's results
  // must not depend on whether another device held the pool).
  const bool was_inside = inside_region;
  inside_region = true;
  try {
    for (int p = 0; p < parts; ++p) body(n * p / parts, n * (p + 1) / parts, p);
  } catch (...) {
    inside_region = was_inside;
    throw;
  }
  inside_region = was_inside;
}

}  // namespace lockstep::cpu
