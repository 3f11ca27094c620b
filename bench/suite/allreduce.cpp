// allreduce: the sum all-reduce of a float buffer through the Communicator
// interface, over message sizes, with nccl-tests' definitions:
//   time   = mean over the timed iterations (rank 0's clock, after a barrier)
//   algbw  = bytes / time
//   busbw  = algbw * 2(n-1)/n   (the bytes each rank's link carries in a ring)
// The LocalCommunicator runs n ranks as n threads on the CPU. NCCL between
// GPUs is built inside the replica manager; see the note this suite prints.
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "engine/context.h"
#include "engine/error.h"
#include "engine/local_communicator.h"
#include "plot.h"
#include "suites.h"

namespace lockstep::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
  double seconds = 0.0;  // per iteration
  int iterations = 0;
  bool correct = false;
};

// One message size on `comm`: every rank on its own thread with its own
// context and buffer. The first call checks the sum; the timed ones reduce zeros
// (the same traffic, and no overflow however many iterations run).
Timing time_all_reduce(Communicator& comm, Device device, int64_t count, int warmup, int iterations) {
  const int n = comm.size();
  std::barrier sync(n);
  Timing t;
  t.iterations = iterations;
  std::vector<int> ok(n, 0);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      Context ctx(device);
      Tensor buffer = Tensor::empty(Shape{count}, device);
      float* data = buffer.data();
      std::fill(data, data + count, static_cast<float>(rank + 1));
      comm.all_reduce_sum(rank, ctx, data, count);
      comm.wait(rank, ctx);
      const float expected = static_cast<float>(n * (n + 1) / 2);
      ok[rank] = data[0] == expected && data[count / 2] == expected && data[count - 1] == expected;
      std::fill(data, data + count, 0.0f);
      for (int i = 0; i < warmup; ++i) comm.all_reduce_sum(rank, ctx, data, count);
      comm.wait(rank, ctx);
      sync.arrive_and_wait();
      auto start = Clock::now();
      for (int i = 0; i < iterations; ++i) comm.all_reduce_sum(rank, ctx, data, count);
      comm.wait(rank, ctx);
      ctx.synchronize();
      if (rank == 0) t.seconds = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
    });
  }
  for (auto& th : threads) th.join();
  t.correct = std::all_of(ok.begin(), ok.end(), [](int v) { return v != 0; });
  return t;
}

}  // namespace

SuiteResult run_allreduce(const Options& given) {
  Options o = given;
  const std::vector<Device> devices = resolve_devices(o.devices);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.ranks.empty()) {
    o.ranks = {2};
    if (cores > 2 && !o.quick) o.ranks.push_back(std::min(cores, 8));
  }
  if (o.max_bytes == 0) o.max_bytes = o.quick ? (int64_t(16) << 20) : (int64_t(1) << 30);
  LS_CHECK(o.max_bytes >= 4096, "--max-bytes must be at least 4096, got ", o.max_bytes);
  const int factor = 2;
  std::vector<int64_t> sizes;
  for (int64_t b = 4096; b <= o.max_bytes; b *= factor) sizes.push_back(b);
  const bool run_cpu = std::any_of(devices.begin(), devices.end(), [](const Device& d) { return d.is_cpu(); });
  int gpus_selected = 0;
  for (const Device& d : devices) gpus_selected += d.is_cuda();

  SuiteResult result;
  result.title = fmt("allreduce: float sum over %s .. %s (x%d), nccl-tests definitions (busbw = algbw x 2(n-1)/n)",
                     human_bytes(double(sizes.front())).c_str(), human_bytes(double(sizes.back())).c_str(), factor);
  result.settings = {{"sizes_bytes", sizes}, {"ranks", o.ranks}, {"devices", device_list(devices)},
                     {"quick", o.quick}};
  result.table = Table({"size", "communicator", "ranks", "device", "iterations", "time us", "algbw GB/s",
                        "busbw GB/s", "check"});

  std::vector<Series> series;
  if (run_cpu) {
    for (int n : o.ranks) {
      Series s{fmt("LocalCommunicator, %d ranks (CPU threads)", n), {}, {}};
      for (int64_t bytes : sizes) {
        // Enough iterations for a steady figure, fewer for the big messages.
        const int64_t budget = o.quick ? (int64_t(256) << 20) : (int64_t(1) << 30);
        const int iterations = o.steps > 0 ? o.steps
                                           : static_cast<int>(std::clamp<int64_t>(budget / bytes, 5, o.quick ? 50 : 200));
        const int warmup = bytes >= (int64_t(256) << 20) ? 1 : 2;
        std::fprintf(stderr, "allreduce: %d ranks, %s ...\n", n, human_bytes(double(bytes)).c_str());
        LocalCommunicator comm(n);
        Timing t = time_all_reduce(comm, Device::cpu(), bytes / 4, warmup, iterations);
        const double algbw = bytes / t.seconds / 1e9;
        const double busbw = algbw * 2.0 * (n - 1) / n;
        result.rows.push_back({{"communicator", "LocalCommunicator"},
                               {"device", "cpu"},
                               {"ranks", n},
                               {"bytes", bytes},
                               {"iterations", iterations},
                               {"seconds", t.seconds},
                               {"algbw_GBps", algbw},
                               {"busbw_GBps", busbw},
                               {"correct", t.correct}});
        result.table.add({human_bytes(double(bytes)), "LocalCommunicator", std::to_string(n), "cpu",
                          std::to_string(iterations), fmt("%.1f", t.seconds * 1e6), fmt("%.2f", algbw),
                          fmt("%.2f", busbw), t.correct ? "ok" : "WRONG SUM"});
        s.x.push_back(double(bytes));
        s.y.push_back(busbw);
      }
      series.push_back(s);
    }
  } else {
    result.skipped.push_back("LocalCommunicator on the CPU: --devices " + o.devices + " selects no CPU");
  }

  const std::string nccl_gap =
      "NcclCommunicator rows: lockstep-bench cannot build one. Its header (engine/cuda/nccl_communicator.h) includes "
      "nccl.h and CUDA headers, and the replica manager makes it in an unnamed namespace; the bench needs a "
      "CUDA-free factory in the library, e.g. engine/communicator_factory.h: std::unique_ptr<Communicator> "
      "make_communicator(const std::vector<Device>& devices, std::chrono::milliseconds timeout) (NCCL for distinct "
      "GPUs, local otherwise), after which time_all_reduce() here runs it unchanged on cuda buffers";
  if (gpus_selected >= 2) result.skipped.push_back(nccl_gap);
  else if (cuda_device_count() >= 2) result.skipped.push_back("NcclCommunicator rows: --devices selects fewer than two GPUs");
  else
    result.skipped.push_back(fmt("NcclCommunicator rows: they need two or more GPUs (this machine has %d)",
                                 cuda_device_count()));
  result.notes.push_back("time: mean per iteration on rank 0's clock after a barrier; the first call of each size "
                         "checks the sum (check column), the timed ones reduce zeros");
  result.notes.push_back("LocalCommunicator: ranks are threads of this process; each sums its share of the elements "
                         "over all ranks and copies the result back, so busbw here measures host memory traffic");
  if (gpus_selected < 2 && cuda_device_count() < 2) result.notes.push_back(nccl_gap);

  note_unused(o, {"--model", "--batch", "--batches", "--epochs"}, result);

  PlotSpec spec{"all-reduce bus bandwidth against message size", "message size (bytes)", "busbw (GB/s)"};
  spec.logx = true;
  spec.xformat = "%.0b%B";
  result.png = plot_lines(png_path(o), spec, series, result.notes);
  return result;
}

}  // namespace lockstep::bench
