// scaling: training images/s of one model for 1, 2, ..., N replicas, weak
// (fixed per-replica batch) and strong (fixed global batch), on synthetic
// data so that the data path is not what is measured. With several GPUs each
// replica has its own GPU; on one GPU or the CPU the N replicas share it, and
// the figure is then the cost of replication, not a speed-up.
#include <cmath>
#include <cstdio>
#include <map>

#include "child.h"
#include "gpu_peaks.h"
#include "base/error.h"
#include "distributed/world.h"
#include "plot.h"
#include "suites.h"

namespace lockstep::bench {

std::vector<std::string> step_flags(const Options& o, const std::vector<Device>& replicas, int64_t global_batch) {
  std::vector<std::string> f{"--replica-devices", device_list(replicas), "--model", o.model, "--input", o.input,
                             "--classes", std::to_string(o.classes), "--batch", std::to_string(global_batch),
                             "--steps", std::to_string(o.steps), "--warmup", std::to_string(o.warmup),
                             "--threads", std::to_string(cpu_threads(o))};
  if (!o.precision.empty()) f.insert(f.end(), {"--precision", o.precision});
  else if (o.tf32) f.push_back("--tf32");
  if (!o.memory_format.empty()) f.insert(f.end(), {"--memory-format", o.memory_format});
  if (o.eager) f.push_back("--eager");
  return f;
}

namespace {

double max_peak(const json& r) {
  double peak = 0.0;
  for (const auto& [device, bytes] : r["peak_bytes"].items()) peak = std::max(peak, bytes.get<double>());
  return peak;
}

}  // namespace

void scaling_defaults(Options& o, bool gpu) {
  if (o.model.empty()) o.model = gpu ? (o.quick ? "resnet20" : "resnet18") : (o.quick ? "simple-cnn" : "resnet20");
  if (o.input.empty()) o.input = o.quick && !gpu ? "1x28x28" : "3x32x32";
  if (o.batch == 0) o.batch = gpu ? (o.quick ? 64 : 128) : (o.quick ? 16 : 32);
  if (o.steps == 0) o.steps = gpu ? (o.quick ? 10 : 30) : (o.quick ? 8 : 10);
  if (o.warmup < 0) o.warmup = gpu ? (o.quick ? 3 : 10) : 2;
}

SuiteResult run_scaling(const Options& given) {
  if (std::shared_ptr<ProcessGroup> world = join_world()) return run_process_scaling(given, *world);
  Options o = given;
  o.eager = true;  // the phases this suite reports need the eager step's clocks
  const std::vector<Device> devices = resolve_devices(o.devices);
  const bool gpu = any_gpu(devices);
  LS_CHECK(!gpu || !std::any_of(devices.begin(), devices.end(), [](const Device& d) { return d.is_cpu(); }),
           "scaling runs on GPUs or on the CPU, not both: pick one with --devices");
  scaling_defaults(o, gpu);

  // Distinct devices: one replica per device. One device: N replicas on it.
  const bool same_device = devices.size() == 1;
  int max_replicas = same_device ? (o.replicas_max > 0 ? o.replicas_max : (gpu ? 4 : 2))
                                 : static_cast<int>(devices.size());
  if (!same_device && o.replicas_max > 0) max_replicas = std::min(max_replicas, o.replicas_max);
  auto replicas_for = [&](int n) {
    std::vector<Device> r;
    for (int i = 0; i < n; ++i) r.push_back(same_device ? devices[0] : devices[i]);
    return r;
  };
  const int64_t strong_global = o.batch * max_replicas;

  SuiteResult result;
  result.title = fmt("scaling: %s on synthetic %s images, %s, %d timed steps after %d warm-up (median)%s",
                     o.model.c_str(), o.input.c_str(),
                     same_device ? fmt("1..%d replicas on %s", max_replicas, devices[0].str().c_str()).c_str()
                                 : fmt("1..%d GPUs, one replica each", max_replicas).c_str(),
                     o.steps, o.warmup, same_device ? " -- replication overhead (same device), not speed-up" : "");
  result.settings = {{"model", o.model},          {"input", o.input},         {"classes", o.classes},
                     {"devices", device_list(devices)}, {"same_device", same_device}, {"max_replicas", max_replicas},
                     {"weak_batch_per_replica", o.batch}, {"strong_global_batch", strong_global},
                     {"steps", o.steps},          {"warmup", o.warmup},       {"threads", cpu_threads(o)},
                     {"tf32", o.tf32},            {"quick", o.quick}};
  std::vector<std::string> headers{"scaling", "replicas", "global batch", "per replica", "step ms", "images/s",
                                   "vs 1 replica", "efficiency", "data ms", "fwd ms", "bwd ms", "comm ms",
                                   "update ms", "peak mem/device", "note"};
  // On GPUs: the measured step over the roofline bound of the busiest GPU's
  // share of the batch (all of it when the replicas share one GPU).
  if (gpu) headers.push_back("step / bound");
  result.table = Table(headers);
  const std::string gpu_name = gpu ? cuda_devices().at(static_cast<size_t>(devices[0].index)).name : "";

  std::map<std::pair<int, int64_t>, json> measured;  // (replicas, global batch) -> child result
  auto measure = [&](int n, int64_t global) -> const json& {
    auto key = std::make_pair(n, global);
    auto it = measured.find(key);
    if (it != measured.end()) return it->second;
    std::fprintf(stderr, "scaling: %d replica(s), global batch %lld ...\n", n, static_cast<long long>(global));
    return measured[key] = run_child("_steps", step_flags(o, replicas_for(n), global));
  };

  std::vector<Series> series;
  for (const char* kind : {"weak", "strong"}) {
    const bool weak = std::string(kind) == "weak";
    Series s{std::string(kind) + (weak ? fmt(" (%lld per replica)", static_cast<long long>(o.batch))
                                       : fmt(" (global %lld)", static_cast<long long>(strong_global))),
             {}, {}};
    double base = NAN;
    for (int n = 1; n <= max_replicas; ++n) {
      const int64_t global = weak ? o.batch * n : strong_global;
      const json& r = measure(n, global);
      json row{{"scaling", kind}, {"replicas", n}, {"global_batch", global}, {"per_replica_batch", global / n}};
      if (failed(r)) {
        row["error"] = r["error"];
        result.rows.push_back(row);
        result.table.add({kind, std::to_string(n), std::to_string(global), std::to_string(global / n), "", "", "", "",
                          "", "", "", "", "", "", "failed: " + r["error"].get<std::string>().substr(0, 120)});
        continue;
      }
      const double ips = r["images_per_second"].get<double>();
      if (n == 1) base = ips;
      const double vs1 = ips / base;
      const double efficiency = vs1 / n;
      const json& ph = r["phase_seconds_mean"];
      std::string note = n == 1 ? "baseline" : same_device ? "replication overhead (same device), not speed-up" : "";
      row["images_per_second"] = ips;
      row["vs_one_replica"] = vs1;
      row["efficiency"] = same_device ? json(nullptr) : json(efficiency);
      row["label"] = note;
      row["measurement"] = r;
      std::vector<std::string> cells{kind, std::to_string(n), std::to_string(global), std::to_string(global / n),
                                     ms_text(r["step_seconds_median"].get<double>()), fmt("%.1f", ips),
                                     fmt("%.2fx", vs1), same_device ? "-" : fmt("%.0f%%", 100.0 * efficiency),
                                     ms_text(ph["data"].get<double>()), ms_text(ph["forward"].get<double>()),
                                     ms_text(ph["backward"].get<double>()), ms_text(ph["communication"].get<double>()),
                                     ms_text(ph["update"].get<double>()), human_bytes(max_peak(r)), note};
      if (gpu) {
        const int64_t busiest = same_device ? global : (global + n - 1) / n;
        const json bound = bound_for_device(o.model, o.input, o.classes, busiest, precision(o), gpu_name);
        row["roofline"] = bound;
        if (bound.contains("bound_seconds")) {
          row["step_over_bound"] = r["step_seconds_median"].get<double>() / bound["bound_seconds"].get<double>();
          cells.push_back(fmt("%.2fx", row["step_over_bound"].get<double>()));
        } else {
          cells.push_back("n/a");
        }
      }
      result.rows.push_back(row);
      result.table.add(cells);
      s.x.push_back(n);
      s.y.push_back(ips);
    }
    series.push_back(s);
  }
  // The reference line: perfect scaling on distinct devices, no overhead on one.
  if (!series.empty() && !series[0].y.empty()) {
    Series ideal{same_device ? "no overhead (1-replica images/s)" : "ideal weak scaling", {}, {}};
    for (int n = 1; n <= max_replicas; ++n) {
      ideal.x.push_back(n);
      ideal.y.push_back(series[0].y[0] * (same_device ? 1.0 : n));
    }
    series.push_back(ideal);
  }

  result.notes.push_back("images/s = global batch / median step time; efficiency = images/s(N) / (N x images/s(1))");
  result.notes.push_back("phases (replica 0, mean per step, device synchronised before each clock read): data = "
                         "slice to the device, comm = exposed all-reduce and BN-statistics wait after backward");
  result.notes.push_back("peak mem/device: allocator_for(device)->peak_bytes() in the child process of that "
                         "configuration (on the CPU it includes the synthetic batch and all replicas)");
  if (same_device)
    result.notes.push_back(fmt("%d replicas share %s: rows with N > 1 measure replication overhead (same device), "
                               "not speed-up%s",
                               max_replicas, devices[0].str().c_str(),
                               gpu ? "" : fmt("; the %d CPU threads are shared out: each of N replicas runs "
                                              "OpenBLAS with max(1, %d/N) threads",
                                              cpu_threads(o), cpu_threads(o)).c_str()));
  if (same_device && !gpu)
    result.notes.push_back("on the CPU each replica has its own thread, so N replicas also spread lockstep's "
                           "single-threaded loops (everything but BLAS) over more cores: images/s can rise with N");
  if (gpu)
    result.notes.push_back("step / bound: the measured median step over the roofline bound (lockstep-bench roofline: "
                           "published peaks, a bound, not a measurement) of the busiest GPU's samples; "
                           "communication is not in the bound");
  if (!gpu) result.skipped.push_back(cuda_device_count() == 0 ? "GPU rows: no GPU on this machine"
                                                              : "GPU rows: --devices cpu");
  else if (same_device) result.skipped.push_back("multi-GPU rows: only one GPU selected");

  note_unused(o, {"--batches", "--epochs"}, result);

  PlotSpec spec{fmt("%s, %s: images/s against replicas%s", o.model.c_str(), devices[0].is_cpu() ? "CPU" : "GPUs",
                    same_device ? " (same device: replication overhead)" : ""),
                "replicas", "images/s"};
  spec.xtics = 1;
  result.png = plot_lines(png_path(o), spec, series, result.notes);
  return result;
}

}  // namespace lockstep::bench
