// The block scheduler: a block's threads run as Boost.Context fibers on the
// stream worker's OS thread. A fiber runs the next not-yet-started threads as
// plain calls until one blocks (HIP-CPU's trick), so a barrier-free kernel
// costs one fiber per block. __syncthreads and warp intrinsics block a thread
// until its partners arrive; the scheduler resumes released threads in the
// order LOCKSTEP_EMU_ORDER asks for, and reports what a GPU would silently get
// wrong (divergent barriers, shuffles naming exited lanes, deadlocks).
#include "fiber_block.h"

#include "emu_runtime.h"
#include "thread_state.h"

#include <boost/context/fiber.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define LS_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define LS_TSAN 1
#endif

namespace ctx = boost::context;

namespace lockstep::emu::kernel {
namespace {

#if defined(LS_ASAN)
constexpr size_t kStackSize = 512 << 10;  // ASan's redzones make frames larger
#else
// 128 KB: a thread's frame may hold a by-value copy of a 32 KB
// __grid_constant__ parameter; pages never touched are never committed.
constexpr size_t kStackSize = 128 << 10;
#endif

// Stacks are reused across blocks and kernels; each worker thread keeps its
// own pool and frees it when the thread exits.
struct StackPool {
  std::vector<void*> free;
  ~StackPool() {
    for (void* p : free) std::free(p);
  }
  ctx::stack_context get() {
    void* p;
    if (!free.empty()) {
      p = free.back();
      free.pop_back();
    } else {
      p = std::aligned_alloc(64, kStackSize);
      if (!p) std::abort();
    }
#if defined(LS_ASAN)
    // A reused stack still carries the poison of the frames that ran on it.
    ASAN_UNPOISON_MEMORY_REGION(p, kStackSize);
#endif
    ctx::stack_context sc;
    sc.size = kStackSize;
    sc.sp = static_cast<char*>(p) + kStackSize;
    return sc;
  }
  void put(ctx::stack_context& sc) { free.push_back(static_cast<char*>(sc.sp) - sc.size); }
};
thread_local StackPool t_stacks;

struct PoolAlloc {
  ctx::stack_context allocate() { return t_stacks.get(); }
  void deallocate(ctx::stack_context& sc) noexcept { t_stacks.put(sc); }
};

enum class St : uint8_t { unstarted, running, runnable, barrier, warp, exited };

struct Fiber;

struct Slot : ThreadState {
  St st = St::unstarted;
  std::source_location site;
  Fiber* fiber = nullptr;
  uint64_t in = 0, out = 0;
  int arg = 0;
};

struct Fiber {
  ctx::fiber self, sched;
  Slot* slot = nullptr;
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* asan_fake = nullptr;
  void* tsan = nullptr;
};

struct Warp {
  unsigned mask = 0, arrived = 0;
  WarpOp op = WarpOp::syncwarp;
  int width = 32;
  std::source_location site;
};

struct Abort {};  // unwinds a thread's fiber when its block has failed

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::syncwarp: return "__syncwarp";
    case WarpOp::shfl: return "__shfl_sync";
    case WarpOp::shfl_up: return "__shfl_up_sync";
    case WarpOp::shfl_down: return "__shfl_down_sync";
    case WarpOp::shfl_xor: return "__shfl_xor_sync";
    case WarpOp::ballot: return "__ballot_sync";
    case WarpOp::any: return "__any_sync";
    case WarpOp::all: return "__all_sync";
  }
  return "?";
}

std::string where(const std::source_location& s) {
  const char* f = s.file_name();
  if (const char* slash = std::strrchr(f, '/')) f = slash + 1;
  return std::string(f) + ":" + std::to_string(s.line());
}

// The same file's name is usually the same pointer; strcmp only when not
// (it was 4% of the emulated gpu tests' time, called per lane per barrier).
bool same_site(const std::source_location& a, const std::source_location& b) {
  return a.line() == b.line() && a.column() == b.column() &&
         (a.file_name() == b.file_name() || std::strcmp(a.file_name(), b.file_name()) == 0);
}

struct Block {
  const GridRun* grid = nullptr;
  BlockState info{};
  unsigned n = 0;
  std::vector<Slot> slots;
  std::vector<unsigned> order;  // start and release order (a permutation)
  size_t next_start = 0;
  std::deque<Slot*> runnable;
  unsigned arrived = 0, exited = 0;
  std::source_location barrier_site;
  std::vector<Warp> warps;
  bool failed = false;
  std::mt19937_64 rng;
  // The worker's own stack, for ASan's switch annotations, and TSan's handle.
  const void* sched_bottom = nullptr;
  size_t sched_size = 0;
  void* sched_fake = nullptr;
  void* sched_tsan = nullptr;
  std::vector<std::unique_ptr<Fiber>> fiber_pool;
  Fiber* running = nullptr;  // the fiber now executing; null on the scheduler

  std::string thread_name(const Slot& s) const {
    std::ostringstream o;
    o << "thread (" << s.idx.x << "," << s.idx.y << "," << s.idx.z << ")";
    return o.str();
  }
  std::string block_name() const {
    std::ostringstream o;
    o << "kernel " << grid->kernel << " block (" << info.block_idx.x << "," << info.block_idx.y << ","
      << info.block_idx.z << ")";
    return o.str();
  }

  // Reports a fault once, then unwinds every thread of the block.
  [[noreturn]] void fail(const std::string& what) {
    std::string msg = block_name() + ": " + what;
    if (grid->order == Order::warp_random)
      msg += " [replay: LOCKSTEP_EMU_ORDER=warp-random LOCKSTEP_EMU_SEED=" + std::to_string(grid->session_seed) +
             ", launch #" + std::to_string(grid->launch_number) + "]";
    lockstep::emu::fail_async(grid->device, cudaErrorLaunchFailure, msg);
    failed = true;
    // Every other blocked thread is resumed only to unwind; the failing one
    // (if a thread failed, not the scheduler) unwinds by this throw.
    for (Slot& s : slots)
      if ((s.st == St::barrier || s.st == St::warp) && (!running || s.fiber != running))
        s.st = St::runnable, runnable.push_back(&s);
    throw Abort{};
  }

  void make_order() {
    order.resize(n);
    for (unsigned i = 0; i < n; ++i) order[i] = i;
    if (grid->order == Order::reverse) std::reverse(order.begin(), order.end());
    if (grid->order == Order::warp_random) shuffle_warps();
  }
  // One warp at a time, warps in random order, lanes in order.
  void shuffle_warps() {
    unsigned nw = (n + 31) / 32;
    std::vector<unsigned> w(nw);
    for (unsigned i = 0; i < nw; ++i) w[i] = i;
    std::shuffle(w.begin(), w.end(), rng);
    order.clear();
    for (unsigned wi : w)
      for (unsigned t = wi * 32; t < std::min(n, wi * 32 + 32); ++t) order.push_back(t);
  }
};

thread_local Block* t_run = nullptr;

void asan_start(void** fake, const void* bottom, size_t size) {
#if defined(LS_ASAN)
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}
void asan_finish(void* fake, const void** bottom, size_t* size) {
#if defined(LS_ASAN)
  __sanitizer_finish_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}

// From a thread's fiber back to the scheduler; returns when resumed.
void yield(Block& b, Slot& s) {
  Fiber* f = s.fiber;
  asan_start(&f->asan_fake, b.sched_bottom, b.sched_size);
#if defined(LS_TSAN)
  __tsan_switch_to_fiber(b.sched_tsan, 0);
#endif
  f->sched = std::move(f->sched).resume();
  asan_finish(f->asan_fake, &b.sched_bottom, &b.sched_size);
  t_thread = &s;
  if (b.failed) throw Abort{};
}

void check_warp_exit(Block& b, Slot& s);

void thread_exit(Block& b, Slot& s) {
  s.st = St::exited;
  ++b.exited;
  check_warp_exit(b, s);
  // A barrier every live thread waits at can no longer complete: this one left.
  if (b.arrived > 0 && b.arrived + b.exited == b.n) {
    for (Slot& o : b.slots)
      if (o.st == St::barrier)
        b.fail("__syncthreads at " + where(b.barrier_site) + " waited for by " + b.thread_name(o) +
               " and others, but " + b.thread_name(s) + " exited without reaching it (divergent barrier)");
  }
}

Slot* take_next(Block& b) {
  // Released threads go first; then not-yet-started ones in schedule order.
  if (!b.runnable.empty() || b.next_start == b.n || b.failed) return nullptr;
  return &b.slots[b.order[b.next_start++]];
}

ctx::fiber fiber_main(Block* b, Fiber* f, ctx::fiber&& sched) {
  f->sched = std::move(sched);
  asan_finish(nullptr, &b->sched_bottom, &b->sched_size);
  try {
    while (Slot* s = take_next(*b)) {
      f->slot = s;
      s->fiber = f;
      s->st = St::running;
      t_thread = s;
      b->grid->body(b->grid->data);
      thread_exit(*b, *s);
    }
  } catch (Abort&) {
  }
  f->slot = nullptr;
  asan_start(nullptr, b->sched_bottom, b->sched_size);  // this fiber's fake stack may go
#if defined(LS_TSAN)
  __tsan_switch_to_fiber(b->sched_tsan, 0);
#endif
  return std::move(f->sched);
}

Fiber* new_fiber(Block& b) {
  auto f = std::make_unique<Fiber>();
  ctx::stack_context sc = t_stacks.get();
  f->stack_bottom = static_cast<char*>(sc.sp) - sc.size;
  f->stack_size = sc.size;
  Fiber* raw = f.get();
  Block* bp = &b;
  f->self = ctx::fiber(std::allocator_arg, ctx::preallocated(sc.sp, sc.size, sc), PoolAlloc{},
                       [bp, raw](ctx::fiber&& sched) { return fiber_main(bp, raw, std::move(sched)); });
#if defined(LS_TSAN)
  f->tsan = __tsan_create_fiber(0);
#endif
  b.fiber_pool.push_back(std::move(f));
  return raw;
}

void switch_into(Block& b, Fiber* f) {
  asan_start(&b.sched_fake, f->stack_bottom, f->stack_size);
#if defined(LS_TSAN)
  __tsan_switch_to_fiber(f->tsan, 0);
#endif
  b.running = f;
  f->self = std::move(f->self).resume();
  b.running = nullptr;
  asan_finish(b.sched_fake, nullptr, nullptr);
}

void deadlock(Block& b) {
  // Nothing can run, nothing is left to start, yet threads wait.
  std::ostringstream o;
  o << "deadlock: every live thread is blocked and no barrier can complete:";
  int shown = 0;
  for (Slot& s : b.slots) {
    if (s.st != St::barrier && s.st != St::warp) continue;
    if (shown++ == 6) {
      o << " ...";
      break;
    }
    o << " " << b.thread_name(s) << " waits at "
      << (s.st == St::barrier ? std::string("__syncthreads") : std::string("a warp intrinsic")) << " "
      << where(s.site) << ";";
  }
  o << " " << b.exited << " of " << b.n << " threads exited";
  try {
    b.fail(o.str());
  } catch (Abort&) {
  }
}

void run_block(Block& b) {
  b.next_start = 0;
  b.arrived = b.exited = 0;
  b.runnable.clear();
  for (Slot& s : b.slots) s.st = St::unstarted, s.fiber = nullptr;  // idx and linear set once, in run_grid
  for (Warp& w : b.warps) w = Warp{};
  if (b.grid->order == Order::warp_random) b.make_order();
  t_block = &b.info;
  for (;;) {
    if (!b.runnable.empty()) {
      Slot* s = b.runnable.front();
      b.runnable.pop_front();
      s->st = St::running;
      t_thread = s;
      switch_into(b, s->fiber);
    } else if (b.next_start < b.n && !b.failed) {
      switch_into(b, new_fiber(b));
    } else if (!b.failed && b.exited < b.n) {
      deadlock(b);  // queues the blocked threads to unwind
    } else {
      break;
    }
  }
#if defined(LS_TSAN)
  for (auto& f : b.fiber_pool) __tsan_destroy_fiber(f->tsan);
#endif
  b.fiber_pool.clear();  // every fiber has finished; stacks went back to the pool
  t_thread = nullptr;
}

void release_barrier(Block& b) {
  // All threads continue, in the schedule's order (re-shuffled for warp-random).
  if (b.grid->order == Order::warp_random) b.shuffle_warps();
  for (unsigned i : b.order) {
    Slot& s = b.slots[i];
    if (s.st == St::barrier) s.st = St::runnable, b.runnable.push_back(&s);
  }
  b.arrived = 0;
}

Block& current_block(const char* what) {
  if (!t_run || !t_thread) {
    std::fprintf(stderr, "lockstep emulated GPU: %s called outside a kernel\n", what);
    std::abort();
  }
  return *t_run;
}

void check_warp_exit(Block& b, Slot& s) {
  Warp& w = b.warps[s.linear / 32];
  unsigned bit = 1u << (s.linear % 32);
  if (w.arrived && (w.mask & bit) && !(w.arrived & bit))
    b.fail(std::string(op_name(w.op)) + " at " + where(w.site) + " names lane " + std::to_string(s.linear % 32) +
           " in its mask, but " + b.thread_name(s) + " exited without reaching it");
}

}  // namespace

void syncthreads(std::source_location site) {
  Block& b = current_block("__syncthreads");
  Slot& s = *static_cast<Slot*>(t_thread);
  if (b.arrived == 0) {
    b.barrier_site = site;
  } else if (!same_site(site, b.barrier_site)) {
    b.fail(b.thread_name(s) + " waits at __syncthreads " + where(site) + " while others wait at " +
           where(b.barrier_site) + " (divergent barrier)");
  }
  s.st = St::barrier;
  s.site = site;
  ++b.arrived;
  if (b.arrived + b.exited == b.n) {
    if (b.exited > 0)
      b.fail("__syncthreads at " + where(site) + " reached by " + std::to_string(b.arrived) + " threads, but " +
             std::to_string(b.exited) + " exited without reaching it (divergent barrier)");
    release_barrier(b);
  }
  yield(b, s);
}

uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width, std::source_location site) {
  Block& b = current_block(op_name(op));
  Slot& s = *static_cast<Slot*>(t_thread);
  const unsigned lane = s.linear % 32, warp_base = s.linear - lane;
  const unsigned bit = 1u << lane;
  const unsigned lanes_present = (b.n - warp_base >= 32) ? 0xffffffffu : ((1u << (b.n - warp_base)) - 1);
  // Built only on a failure path: string work per call would dominate.
  auto me = [&] { return b.thread_name(s) + " at " + std::string(op_name(op)) + " " + where(site); };
  if (!(mask & bit)) b.fail(me() + ": the mask 0x" + (std::ostringstream() << std::hex << mask).str() +
                            " does not name the calling lane");
  if (mask & ~lanes_present) b.fail(me() + ": the mask names lanes that do not exist in this block");
  if (width <= 0 || width > 32 || (width & (width - 1))) b.fail(me() + ": width must be a power of two <= 32");
  Warp& w = b.warps[s.linear / 32];
  if (w.arrived == 0) {
    // A lane of the mask that exited before the first arrival is caught here,
    // one that exits later by check_warp_exit: checking on every arrival
    // (32 lanes each) was a fifth of the emulated gpu tests' time.
    for (unsigned l = 0; l < 32; ++l)
      if ((mask >> l & 1) && b.slots[warp_base + l].st == St::exited)
        b.fail(me() + ": the mask names lane " + std::to_string(l) + ", which has exited");
    w.mask = mask, w.op = op, w.width = width, w.site = site;
  } else if (w.op != op || w.mask != mask || w.width != width || !same_site(w.site, site)) {
    b.fail(me() + " (mask 0x" + (std::ostringstream() << std::hex << mask).str() + ") while lanes of its warp wait at " +
           op_name(w.op) + " " + where(w.site) + " (mask 0x" + (std::ostringstream() << std::hex << w.mask).str() +
           "): lanes diverge at warp intrinsics");
  }
  s.in = value;
  s.arg = arg;
  s.site = site;
  w.arrived |= bit;
  if ((w.arrived & mask) != mask) {
    s.st = St::warp;
    yield(b, s);
    return s.out;
  }
  // The last lane to arrive computes every participant's result, so no lane
  // can overwrite an exchange slot another has yet to read.
  uint64_t ballot = 0;
  for (unsigned l = 0; l < 32; ++l)
    if (mask >> l & 1) ballot |= (b.slots[warp_base + l].in != 0 ? 1ull : 0ull) << l;
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask >> l & 1)) continue;
    Slot& p = b.slots[warp_base + l];
    const int segment = static_cast<int>(l) & ~(width - 1);
    int src = static_cast<int>(l);
    switch (op) {
      case WarpOp::shfl: src = segment + (p.arg & (width - 1)); break;
      case WarpOp::shfl_up: src = static_cast<int>(l) - p.arg < segment ? static_cast<int>(l) : static_cast<int>(l) - p.arg; break;
      case WarpOp::shfl_down: src = static_cast<int>(l) + p.arg >= segment + width ? static_cast<int>(l) : static_cast<int>(l) + p.arg; break;
      case WarpOp::shfl_xor: src = (static_cast<int>(l) ^ p.arg) >= segment + width ? static_cast<int>(l) : (static_cast<int>(l) ^ p.arg); break;
      default: break;
    }
    switch (op) {
      case WarpOp::shfl:
      case WarpOp::shfl_up:
      case WarpOp::shfl_down:
      case WarpOp::shfl_xor:
        if (src < 0 || src > 31 || !(mask >> src & 1))
          b.fail(b.thread_name(p) + " at " + op_name(op) + " " + where(site) + " reads lane " + std::to_string(src) +
                 ", which the mask does not name (undefined on a GPU)");
        p.out = b.slots[warp_base + src].in;
        break;
      case WarpOp::ballot: p.out = ballot; break;
      case WarpOp::any: p.out = ballot != 0; break;
      case WarpOp::all: p.out = ballot == (mask & 0xffffffffull); break;
      case WarpOp::syncwarp: p.out = 0; break;
    }
    if (&p != &s) p.st = St::runnable;
  }
  // The waiting lanes resume before anything else: one warp at a time.
  for (unsigned l = 32; l-- > 0;)
    if ((mask >> l & 1) && l != lane) b.runnable.push_front(&b.slots[warp_base + l]);
  w.arrived = 0;
  return s.out;
}

void run_grid(const GridRun& run) {
  Block b;
  b.grid = &run;
  b.info.block_dim = run.block;
  b.info.grid_dim = run.grid;
  b.n = run.block.x * run.block.y * run.block.z;
  b.slots.resize(b.n);
  for (unsigned i = 0; i < b.n; ++i) {  // the same in every block of the grid
    Slot& s = b.slots[i];
    s.linear = i;
    s.idx = uint3{i % run.block.x, (i / run.block.x) % run.block.y, i / (run.block.x * run.block.y)};
  }
  b.warps.resize((b.n + 31) / 32);
  b.rng.seed(run.seed);
  b.make_order();
#if defined(LS_TSAN)
  b.sched_tsan = __tsan_get_current_fiber();
#endif
  Block* outer = t_run;
  const BlockState* outer_block = t_block;
  t_run = &b;
  const uint64_t blocks = uint64_t(run.grid.x) * run.grid.y * run.grid.z;
  std::vector<uint64_t> block_order;
  if (run.order != Order::forward) {
    block_order.resize(blocks);
    for (uint64_t i = 0; i < blocks; ++i) block_order[i] = run.order == Order::reverse ? blocks - 1 - i : i;
    if (run.order == Order::warp_random) std::shuffle(block_order.begin(), block_order.end(), b.rng);
  }
  for (uint64_t k = 0; k < blocks && !b.failed; ++k) {
    uint64_t i = block_order.empty() ? k : block_order[k];
    b.info.block_idx = uint3{static_cast<unsigned>(i % run.grid.x), static_cast<unsigned>(i / run.grid.x % run.grid.y),
                             static_cast<unsigned>(i / (uint64_t(run.grid.x) * run.grid.y))};
    run_block(b);
  }
  t_run = outer;
  t_block = outer_block;
}

}  // namespace lockstep::emu::kernel
