// projection: what N GPUs would do, computed (not measured) from the measured
// one-replica step at each per-replica batch and an assumed link:
//   ring all-reduce time  t_ar = 2(N-1)/N * gradient bytes / busbw
//   without overlap       T_N = T_1 + t_ar
//   with overlap          T_N = T_1 + max(t_ar - T_backward, t_last)
// where t_last is the all-reduce of the last bucket (the first layers'
// gradients), which cannot start before backward ends. Efficiency is
// T_1 / T_N: weak scaling, the per-replica batch held fixed.
#include <cmath>
#include <cstdio>

#include "child.h"
#include "base/error.h"
#include "plot.h"
#include "suites.h"

namespace lockstep::bench {

SuiteResult run_projection(const Options& given) {
  Options o = given;
  o.eager = true;  // the phases this suite reports need the eager step's clocks
  const std::vector<Device> devices = resolve_devices(o.devices);
  const Device device = devices[0];
  const bool gpu = device.is_cuda();
  if (o.model.empty()) o.model = gpu ? "resnet18" : (o.quick ? "simple-cnn" : "resnet20");
  if (o.input.empty()) o.input = o.quick && !gpu ? "1x28x28" : "3x32x32";
  if (o.batches.empty() && o.batch > 0) o.batches = {o.batch};
  if (o.batches.empty())
    o.batches = gpu ? std::vector<int64_t>{32, 64, 128, 256}
                    : (o.quick ? std::vector<int64_t>{8, 16} : std::vector<int64_t>{16, 32, 64});
  if (o.steps == 0) o.steps = gpu ? (o.quick ? 10 : 30) : (o.quick ? 8 : 10);
  if (o.warmup < 0) o.warmup = gpu ? (o.quick ? 3 : 10) : 2;
  const std::vector<int> gpu_counts{2, 4, 8};
  const double busbw = o.busbw * 1e9;

  SuiteResult result;
  result.kind = "projection";
  result.title = fmt("PROJECTION, not a measurement: %s, N-GPU step time from the 1-replica step measured on %s "
                     "and an assumed %.0f GB/s all-reduce bus bandwidth",
                     o.model.c_str(), device.str().c_str(), o.busbw);
  result.settings = {{"model", o.model},  {"input", o.input},           {"classes", o.classes},
                     {"measured_on", device.str()}, {"batches", o.batches}, {"gpu_counts", gpu_counts},
                     {"busbw_GBps", o.busbw}, {"steps", o.steps},      {"warmup", o.warmup},
                     {"threads", cpu_threads(o)}, {"quick", o.quick}};
  result.table = Table({"per-GPU batch", "GPUs", "measured 1-replica step ms", "gradient MB", "all-reduce us",
                        "step ms, no overlap", "efficiency, no overlap", "step ms, overlap", "efficiency, overlap",
                        "projected images/s (overlap)"});

  std::vector<Series> series;
  for (int64_t b : o.batches) {
    std::fprintf(stderr, "projection: measuring 1 replica on %s at batch %lld ...\n", device.str().c_str(),
                 static_cast<long long>(b));
    json r = run_child("_steps", step_flags(o, {device}, b));
    if (failed(r)) {
      result.rows.push_back({{"per_gpu_batch", b}, {"error", r["error"]}});
      result.table.add({std::to_string(b), "", "failed: " + r["error"].get<std::string>().substr(0, 120)});
      continue;
    }
    const double t1 = r["step_seconds_median"].get<double>();
    const double backward = r["phase_seconds_mean"]["backward"].get<double>();
    const double bytes = r["gradient_bytes"].get<double>();
    const double last_bucket_bytes = r["bucket_elements"].empty() ? bytes : r["bucket_elements"].back().get<double>() * 4;
    Series with{fmt("batch %lld, overlap", static_cast<long long>(b)), {1}, {1.0}};
    Series without{fmt("batch %lld, no overlap", static_cast<long long>(b)), {1}, {1.0}};
    for (int n : gpu_counts) {
      const double ring = 2.0 * (n - 1) / n;
      const double t_ar = ring * bytes / busbw;
      const double t_last = ring * last_bucket_bytes / busbw;
      const double no_overlap = t1 + t_ar;
      const double overlap = t1 + std::max(t_ar - backward, t_last);
      result.rows.push_back({{"per_gpu_batch", b},
                             {"gpus", n},
                             {"measured_step_seconds", t1},
                             {"measured_backward_seconds", backward},
                             {"gradient_bytes", bytes},
                             {"last_bucket_bytes", last_bucket_bytes},
                             {"allreduce_seconds", t_ar},
                             {"step_seconds_no_overlap", no_overlap},
                             {"efficiency_no_overlap", t1 / no_overlap},
                             {"step_seconds_overlap", overlap},
                             {"efficiency_overlap", t1 / overlap},
                             {"projected_images_per_second_overlap", n * b / overlap},
                             {"label", "projection, not a measurement"},
                             {"measurement", r}});
      result.table.add({std::to_string(b), std::to_string(n), ms_text(t1), fmt("%.2f", bytes / 1e6), fmt("%.1f", t_ar * 1e6),
                        ms_text(no_overlap), fmt("%.1f%%", 100.0 * t1 / no_overlap), ms_text(overlap),
                        fmt("%.1f%%", 100.0 * t1 / overlap), fmt("%.0f", n * b / overlap)});
      with.x.push_back(n);
      with.y.push_back(t1 / overlap);
      without.x.push_back(n);
      without.y.push_back(t1 / no_overlap);
    }
    series.push_back(with);
    series.push_back(without);
  }

  result.notes.push_back("PROJECTION, not a measurement: only the 1-replica step (median) and its backward time "
                         "were measured, on " + device.str());
  result.notes.push_back(fmt("ring all-reduce time = 2(N-1)/N x gradient bytes / busbw, busbw %.0f GB/s (--busbw; "
                             "370 GB/s is NCCL's published all-reduce bus bandwidth of an 8xH100 NVLink ring)",
                             o.busbw));
  result.notes.push_back("gradient bytes = the model's gradient arena (parameters with 64-byte alignment) x 4");
  result.notes.push_back("overlap: T_N = T_1 + max(t_ar - T_backward, t_last bucket); no overlap: T_N = T_1 + t_ar; "
                         "efficiency = T_1 / T_N (per-GPU batch fixed); ignores BN-statistics all-reduces, "
                         "launch latency and contention");
  if (!gpu)
    result.notes.push_back("the step was measured on the CPU: a GPU step is far shorter, so real GPU efficiency "
                           "would be lower than these rows");

  note_unused(o, {"--epochs"}, result);

  PlotSpec spec{fmt("PROJECTION (not measured): %s, %.0f GB/s busbw, step measured on %s", o.model.c_str(), o.busbw,
                    device.str().c_str()),
                "GPUs", "projected efficiency"};
  spec.logx = true;
  result.png = plot_lines(png_path(o), spec, series, result.notes);
  return result;
}

}  // namespace lockstep::bench
