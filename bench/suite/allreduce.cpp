// allreduce: the sum all-reduce of a float buffer through the Communicator
// interface, over message sizes, with nccl-tests' definitions:
//   time   = mean over the timed iterations (rank 0's clock, after a barrier)
//   algbw  = bytes / time
//   busbw  = algbw * 2(n-1)/n   (the bytes each rank's link carries in a ring)
// The LocalCommunicator runs n ranks as n threads on the CPU; with two or
// more GPUs selected, make_communicator gives NCCL with one rank per GPU.
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "runtime/context.h"
#include "base/error.h"
#include "distributed/communicator.h"
#include "distributed/local_communicator.h"
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

// One message size on `comm`: rank r on its own thread with its own context
// and buffer on devices[r]. The first call checks the sum; the timed ones
// reduce zeros (the same traffic, and no overflow however many iterations run).
Timing time_all_reduce(Communicator& comm, const std::vector<Device>& devices, int64_t count, int warmup,
                       int iterations) {
  const int n = comm.size();
  std::barrier sync(n);
  Timing t;
  t.iterations = iterations;
  std::vector<int> ok(n, 0);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      Context ctx(devices[rank]);
      ctx.make_current();
      Tensor buffer =
          Tensor::from_vector(Shape{count}, std::vector<float>(count, static_cast<float>(rank + 1)), devices[rank]);
      float* data = buffer.data();
      comm.all_reduce_sum(rank, ctx, data, count);
      comm.wait(rank, ctx);
      ctx.synchronize();
      const std::vector<float> host = buffer.to_vector();
      const float expected = static_cast<float>(n * (n + 1) / 2);
      ok[rank] = host[0] == expected && host[count / 2] == expected && host[count - 1] == expected;
      ctx.zero(buffer);
      for (int i = 0; i < warmup; ++i) comm.all_reduce_sum(rank, ctx, data, count);
      comm.wait(rank, ctx);
      ctx.synchronize();
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
        Timing t = time_all_reduce(comm, std::vector<Device>(n, Device::cpu()), bytes / 4, warmup, iterations);
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

  std::vector<Device> gpus;
  for (const Device& d : devices)
    if (d.is_cuda()) gpus.push_back(d);
  if (gpus.size() >= 2) {
    const int n = static_cast<int>(gpus.size());
    auto comm = make_communicator(gpus);
    Series s{fmt("NcclCommunicator, %d GPUs", n), {}, {}};
    for (int64_t bytes : sizes) {
      const int iterations = o.steps > 0 ? o.steps : 20;
      std::fprintf(stderr, "allreduce: NCCL over %d GPUs, %s ...\n", n, human_bytes(double(bytes)).c_str());
      Timing t = time_all_reduce(*comm, gpus, bytes / 4, 5, iterations);
      const double algbw = bytes / t.seconds / 1e9;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      result.rows.push_back({{"communicator", "NcclCommunicator"}, {"device", "cuda"}, {"ranks", n},
                             {"bytes", bytes}, {"iterations", iterations}, {"seconds", t.seconds},
                             {"algbw_GBps", algbw}, {"busbw_GBps", busbw}, {"correct", t.correct}});
      result.table.add({human_bytes(double(bytes)), "NcclCommunicator", std::to_string(n), "cuda",
                        std::to_string(iterations), fmt("%.1f", t.seconds * 1e6), fmt("%.2f", algbw),
                        fmt("%.2f", busbw), t.correct ? "ok" : "WRONG SUM"});
      s.x.push_back(double(bytes));
      s.y.push_back(busbw);
    }
    series.push_back(s);
  } else {
    result.skipped.push_back(fmt("NcclCommunicator rows: they need two or more GPUs selected (this machine has %d)",
                                 cuda_device_count()));
  }
  result.notes.push_back("time: mean per iteration on rank 0's clock after a barrier; the first call of each size "
                         "checks the sum (check column), the timed ones reduce zeros");
  result.notes.push_back("LocalCommunicator: ranks are threads of this process; each sums its share of the elements "
                         "over all ranks and copies the result back, so busbw here measures host memory traffic");

  note_unused(o, {"--model", "--batch", "--batches", "--epochs"}, result);

  PlotSpec spec{"all-reduce bus bandwidth against message size", "message size (bytes)", "busbw (GB/s)"};
  spec.logx = true;
  spec.xformat = "%.0b%B";
  result.png = plot_lines(png_path(o), spec, series, result.notes);
  return result;
}

}  // namespace lockstep::bench
