// kernels: the fused SGD-momentum update (sgd_step: one pass over the
// parameter, gradient and momentum arenas that also clears the gradients)
// against the same update done as four separate passes (weight decay, momentum,
// weight, clear), as GB/s and as a fraction of a memcpy on the same device.
// The arenas are a real model's (resnet18 by default: 11.2M parameters).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "runtime/memory.h"
#include "ops/sgd.h"
#include "layers/models.h"
#include "plot.h"
#include "suites.h"

namespace lockstep::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Median seconds of one call of `f`: each sample runs it `inner` times back
// to back, then `sync`, so a GPU's launch and synchronisation costs are
// spread over several calls.
template <typename F, typename S> double median_seconds(int warmup, int reps, int inner, F&& f, S&& sync) {
  for (int i = 0; i < warmup; ++i) f();
  sync();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    for (int k = 0; k < inner; ++k) f();
    sync();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count() / inner);
  }
  return median(t);
}

// The update as separate passes, each a plain loop over the arena: the
// traffic a framework without a fused optimizer pays.
void unfused_sgd(ParameterArenas& a, const SgdConfig& c, float lr) {
  float* w = a.params.data();
  float* g = a.grads.data();
  float* v = a.momentum.data();
  const int64_t n = a.total();
  for (const ArenaSegment& s : a.segments())
    if (s.decay)
      for (int64_t i = s.offset; i < s.offset + s.count; ++i) g[i] += c.weight_decay * w[i];
  for (int64_t i = 0; i < n; ++i) v[i] = c.momentum * v[i] + g[i];
  for (int64_t i = 0; i < n; ++i) w[i] -= lr * v[i];
  for (int64_t i = 0; i < n; ++i) g[i] = 0.0f;
}

}  // namespace

SuiteResult run_kernels(const Options& given) {
  Options o = given;
  if (o.model.empty()) o.model = "resnet18";
  if (o.input.empty()) o.input = "3x32x32";
  if (o.steps == 0) o.steps = o.quick ? 5 : 20;
  if (o.warmup < 0) o.warmup = 2;
  const std::vector<Device> devices = resolve_devices(o.devices);
  // One row group per kind of device: the CPU when selected, the first GPU selected.
  std::vector<Device> targets;
  for (const Device& d : devices)
    if (d.is_cpu() || std::none_of(targets.begin(), targets.end(), [](const Device& t) { return t.is_cuda(); }))
      targets.push_back(d);
  const std::string spec_text = model_spec(o.model, parse_shape(o.input), o.classes, {});
  const SgdConfig sgd{0.9f, 5e-4f, false};
  const float lr = 1e-3f;

  SuiteResult result;
  result.title = fmt("kernels: SGD-momentum update over the arenas of %s, median of %d after %d warm-up",
                     spec_text.c_str(), o.steps, o.warmup);
  result.settings = {{"model", spec_text}, {"steps", o.steps}, {"warmup", o.warmup}, {"momentum", sgd.momentum},
                     {"weight_decay", sgd.weight_decay}, {"devices", device_list(targets)}, {"quick", o.quick}};
  result.table = Table({"device", "implementation", "parameters", "time ms", "bytes moved", "GB/s",
                        "fraction of memcpy", "time vs fused"});

  std::vector<std::string> labels{"memcpy", "fused sgd_step", "unfused, 4 passes"};
  std::vector<Series> series;
  for (const Device& device : targets) {
    std::fprintf(stderr, "kernels: %s on %s ...\n", spec_text.c_str(), device.str().c_str());
    auto model = build_model_from_spec(spec_text, device, 1);
    ParameterArenas& arenas = model->arenas();
    const int64_t n = arenas.total();
    int64_t decayed = 0, parameters = 0;
    for (const ArenaSegment& s : arenas.segments()) decayed += s.decay ? s.count : 0;
    for (const ParamEntry& e : arenas.entries()) parameters += e.shape.numel();
    arenas.grads.copy_from(arenas.params);  // non-zero gradients for the first pass
    Context ctx(device);

    const int inner = device.is_cuda() ? 10 : 1;

    // memcpy: one arena-sized buffer into another; it reads and writes each byte once.
    // A device-to-device cudaMemcpy may return before it is done: a 4-byte copy
    // back to the host on the same (default) stream waits for it.
    const size_t bytes = static_cast<size_t>(n) * 4;
    Tensor src = Tensor::zeros(Shape{n}, device), dst = Tensor::zeros(Shape{n}, device);
    float probe = 0.0f;
    const double t_copy = median_seconds(
        o.warmup, o.steps, inner, [&] { copy_bytes(dst.data(), device, src.data(), device, bytes); },
        [&] { copy_bytes(&probe, Device::cpu(), dst.data(), device, sizeof probe); });
    const double copy_gbps = 2.0 * bytes / t_copy / 1e9;

    const double t_fused = median_seconds(
        o.warmup, o.steps, inner, [&] { ops::sgd_step(ctx, arenas, sgd, lr); }, [&] { ctx.synchronize(); });
    // Fused: reads w, g, v and writes w, g (cleared), v.
    const double fused_bytes = 24.0 * n;

    struct Row {
      std::string name;
      double seconds, bytes_moved;
    };
    std::vector<Row> rows{{"memcpy", t_copy, 2.0 * bytes}, {"fused sgd_step", t_fused, fused_bytes}};
    if (device.is_cpu()) {
      const double t_unfused = median_seconds(
          o.warmup, o.steps, 1, [&] { unfused_sgd(arenas, sgd, lr); }, [] {});
      // decay: read g, w, write g; momentum: read v, g, write v; weight: read w, v, write w; clear: write g.
      rows.push_back({"unfused, 4 passes", t_unfused, 12.0 * decayed + 12.0 * n + 12.0 * n + 4.0 * n});
    } else {
      result.skipped.push_back("unfused passes on " + device.str() +
                               ": the unfused GPU comparison lives in bench/bench_gpu_kernels.cpp");
    }

    Series s{device.str() + (device.is_cpu() ? " (one thread)" : ""), {}, {}};
    for (const Row& r : rows) {
      const double gbps = r.bytes_moved / r.seconds / 1e9;
      result.rows.push_back({{"device", device.str()},
                             {"implementation", r.name},
                             {"parameters", parameters},
                             {"arena_elements", n},
                             {"seconds", r.seconds},
                             {"bytes_moved", r.bytes_moved},
                             {"GBps", gbps},
                             {"fraction_of_memcpy", gbps / copy_gbps},
                             {"time_vs_fused", r.seconds / t_fused}});
      result.table.add({device.str(), r.name, fmt("%.2fM", parameters / 1e6), ms_text(r.seconds),
                        human_bytes(r.bytes_moved), fmt("%.1f", gbps), fmt("%.0f%%", 100.0 * gbps / copy_gbps),
                        fmt("%.2fx", r.seconds / t_fused)});
      s.y.push_back(gbps);
    }
    if (s.y.size() < labels.size()) s.y.push_back(NAN);
    series.push_back(s);
  }

  result.notes.push_back("bytes moved: memcpy reads and writes the arena once (2 x 4 B/element); fused reads "
                         "w, g, v and writes w, v and the cleared g (24 B/element); unfused: decay pass on the "
                         "decayed weights (12 B), momentum (12 B), weight (12 B) and clear (4 B) per element");
  result.notes.push_back("GB/s = bytes moved / time; fraction of memcpy = that against memcpy's GB/s on the same "
                         "device; on the CPU every variant (memcpy included) runs on one thread, and a one-thread memcpy (two memory "
                         "streams) can draw less bandwidth than the update's six streams: a fraction above 100% says "
                         "the reference is limited, not that the update beats memory");
  if (std::none_of(targets.begin(), targets.end(), [](const Device& d) { return d.is_cuda(); }))
    result.skipped.push_back(cuda_device_count() == 0 ? "GPU rows (fused CUDA kernel): no GPU on this machine"
                                                      : "GPU rows: --devices selects no GPU");

  result.notes.push_back("on a GPU, sgd_step runs the fused CUDA kernel; the unfused GPU comparison lives in "
                         "bench/bench_gpu_kernels.cpp");
  note_unused(o, {"--batch", "--batches", "--epochs"}, result);

  PlotSpec spec{fmt("SGD-momentum update over %s arenas: GB/s", o.model.c_str()), "", "GB/s (bytes moved / time)"};
  result.png = plot_bars(png_path(o), spec, labels, series, result.notes);
  return result;
}

}  // namespace lockstep::bench
