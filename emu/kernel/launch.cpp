// The emulated launch: configuration checks as the hardware does them, pointer
// checks against the runtime's allocations, scheduling order from the
// environment, and the grid queued as a task on the stream's worker.
#include "launch.h"

#include "../runtime/internal.h"
#include "fiber_block.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace lockstep::emu {

namespace {
Schedule initial_schedule() {
  Schedule s;
  const char* order = std::getenv("LOCKSTEP_EMU_ORDER");
  if (order && std::strcmp(order, "reverse") == 0) s.order = Schedule::Order::reverse;
  else if (order && std::strcmp(order, "warp-random") == 0) s.order = Schedule::Order::warp_random;
  else if (order && *order && std::strcmp(order, "forward") != 0)
    std::fprintf(stderr, "lockstep emulated GPU: LOCKSTEP_EMU_ORDER=%s is not forward|reverse|warp-random; using forward\n",
                 order);
  const char* seed = std::getenv("LOCKSTEP_EMU_SEED");
  // Random unless given; every failure report prints the seed to replay it.
  s.seed = seed && *seed ? std::strtoull(seed, nullptr, 10) : std::random_device{}();
  return s;
}
std::mutex g_schedule_mutex;
Schedule& schedule_ref() {
  static Schedule s = initial_schedule();
  return s;
}
std::atomic<uint64_t> g_launches{0};

// LOCKSTEP_EMU_REPORT=1: the counts a run made, printed when it exits, so
// launches and host synchronisations per step can be read off a whole run.
struct ExitReport {
  ~ExitReport() {
    const char* want = std::getenv("LOCKSTEP_EMU_REPORT");
    if (!want || std::strcmp(want, "1") != 0) return;
    std::fprintf(stderr, "lockstep emulated GPU: %llu kernel launches, %llu host synchronisations\n",
                 static_cast<unsigned long long>(g_launches.load()),
                 static_cast<unsigned long long>(host_synchronizations()));
  }
} g_exit_report;
}  // namespace

uint64_t kernel_launches() { return g_launches.load(std::memory_order_relaxed); }

Schedule schedule() {
  std::lock_guard lock(g_schedule_mutex);
  return schedule_ref();
}

void set_schedule(const Schedule& s) {
  std::lock_guard lock(g_schedule_mutex);
  schedule_ref() = s;
}

}  // namespace lockstep::emu

namespace lockstep::emu::kernel {

namespace {
std::string describe_pointer(const void* p) {
  auto a = lockstep::emu::find_allocation(p);
  char buf[160];
  if (!a) {
    std::snprintf(buf, sizeof buf, "%p is host memory (not from cudaMalloc, or already freed)", p);
  } else if (a->kind == Allocation::Kind::pinned_host) {
    std::snprintf(buf, sizeof buf, "%p is pinned host memory", p);
  } else {
    std::snprintf(buf, sizeof buf, "%p is memory of device %d", p, a->device);
  }
  return buf;
}
}  // namespace

cudaError_t launch(LaunchRequest& r) {
  using namespace lockstep::emu::detail;
  const uint64_t threads = uint64_t(r.block.x) * r.block.y * r.block.z;
  cudaError_t e = cudaSuccess;
  if (r.grid.x == 0 || r.grid.y == 0 || r.grid.z == 0 || threads == 0 || threads > 1024 || r.block.x > 1024 ||
      r.block.y > 1024 || r.block.z > 64 || r.grid.x > 0x7fffffffu || r.grid.y > 65535 || r.grid.z > 65535)
    e = cudaErrorInvalidConfiguration;
  else if (r.param_bytes > 32764 || r.shared_bytes > (48u << 10))
    e = cudaErrorInvalidValue;
  if (e != cudaSuccess) {
    std::fprintf(stderr,
                 "lockstep emulated GPU: launch of %s refused (%s): grid (%u,%u,%u), block (%u,%u,%u), %zu bytes of "
                 "dynamic shared memory, %zu bytes of parameters\n",
                 r.kernel, cudaGetErrorName(e), r.grid.x, r.grid.y, r.grid.z, r.block.x, r.block.y, r.block.z,
                 r.shared_bytes, r.param_bytes);
    return record(e);
  }
  cudaStream_t s = resolve(r.stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  for (int i = 0; i < r.pointer_count; ++i) {
    const void* p = r.pointers[i].value;
    if (!p) continue;
    auto a = lockstep::emu::find_allocation(p);
    bool ok = false;
    if (a && a->kind == Allocation::Kind::device) {
      std::lock_guard lock(runtime_mutex());
      ok = a->device == s->device || device(s->device).peer[a->device];
    }
    // Pinned host memory is mapped into the device's address space (UVA): a
    // kernel may read it, as on a GPU.
    if (a && a->kind == Allocation::Kind::pinned_host) ok = true;
    if (!ok) {
      std::fprintf(stderr, "lockstep emulated GPU %d: launch of %s: argument %d: %s, not device memory of device %d\n",
                   s->device, r.kernel, r.pointers[i].index, describe_pointer(p).c_str(), s->device);
      return record(cudaErrorIllegalAddress);
    }
  }
  Schedule sched = lockstep::emu::schedule();
  auto run = std::make_shared<GridRun>();
  run->kernel = r.kernel;
  run->grid = r.grid;
  run->block = r.block;
  run->device = s->device;
  run->order = static_cast<Order>(sched.order);
  // Each launch its own seed, derived from the session's and the launch
  // number, so a failure's printed pair replays it in the same program.
  run->launch_number = g_launches.fetch_add(1);
  run->session_seed = sched.seed;
  run->seed = sched.seed + run->launch_number * 0x9e3779b97f4a7c15ull;
  run->body = r.body;
  run->data = r.data.get();
  std::shared_ptr<void> keep = r.data;
  return record(submit(s, Task{std::string("kernel ") + r.kernel, [run, keep] { run_grid(*run); }, {}}));
}

}  // namespace lockstep::emu::kernel
