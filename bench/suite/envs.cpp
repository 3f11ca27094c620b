// envs: time per training epoch of one model on one data set in each
// environment: the CPU, one GPU, all GPUs. Rows for devices the machine does
// not have (or --devices leaves out) say so instead of a number.
#include <cmath>
#include <cstdio>

#include "child.h"
#include "base/error.h"
#include "data/open_dataset.h"
#include "plot.h"
#include "suites.h"

namespace lockstep::bench {

SuiteResult run_envs(const Options& given) {
  Options o = given;
  if (o.model.empty()) o.model = "simple-cnn";
  if (o.epochs == 0) o.epochs = 1;
  if (o.batch == 0) o.batch = o.quick ? 64 : 128;
  if (o.limit < 0) o.limit = o.quick ? 1024 : 0;
  if (o.data.empty()) o.data = data::default_data_path();

  // The rows and the devices each would use, given --devices.
  const int gpus = cuda_device_count();
  std::vector<Device> selected = o.devices == "all" ? std::vector<Device>{} : resolve_devices(o.devices);
  bool cpu_selected = o.devices == "all" ||
                      std::any_of(selected.begin(), selected.end(), [](const Device& d) { return d.is_cpu(); });
  std::vector<Device> selected_gpus;
  if (o.devices == "all")
    for (int i = 0; i < gpus; ++i) selected_gpus.push_back(Device::cuda(i));
  for (const Device& d : selected)
    if (d.is_cuda()) selected_gpus.push_back(d);

  struct Env {
    std::string name;
    std::vector<Device> devices;
    std::string absent;  // why the row has no number
  };
  std::vector<Env> envs;
  envs.push_back({"CPU", {Device::cpu()}, cpu_selected ? "" : "not run (--devices " + o.devices + ")"});
  if (gpus == 0) {
    envs.push_back({"1 GPU", {}, "not present (no GPU on this machine)"});
    envs.push_back({"all GPUs", {}, "not present (no GPU on this machine)"});
  } else {
    envs.push_back({"1 GPU", selected_gpus.empty() ? std::vector<Device>{} : std::vector<Device>{selected_gpus[0]},
                    selected_gpus.empty() ? "not run (--devices " + o.devices + ")" : ""});
    if (selected_gpus.size() >= 2) envs.push_back({fmt("all GPUs (%zu)", selected_gpus.size()), selected_gpus, ""});
    else
      envs.push_back({"all GPUs", {}, gpus == 1 ? "not present (one GPU: the row above)"
                                                : "not run (--devices selects fewer than two GPUs)"});
  }

  SuiteResult result;
  result.title = fmt("envs: %s on %s%s, batch %lld, time per epoch (mean of %d)", o.model.c_str(), o.data.c_str(),
                     o.limit > 0 ? fmt(" (first %lld samples, evenly spread)", static_cast<long long>(o.limit)).c_str() : "",
                     static_cast<long long>(o.batch), o.epochs);
  result.settings = {{"model", o.model}, {"data", o.data},     {"limit", o.limit},
                     {"batch", o.batch}, {"epochs", o.epochs}, {"lr", o.lr},
                     {"threads", cpu_threads(o)}, {"quick", o.quick}};
  result.table = Table({"environment", "devices", "epoch s", "images/s", "vs CPU"});

  std::vector<std::string> labels, missing;
  Series seconds{"seconds per epoch", {}, {}};
  double cpu_seconds = NAN;
  for (const Env& env : envs) {
    json row{{"environment", env.name}, {"devices", device_list(env.devices)}};
    labels.push_back(env.name);
    missing.push_back(env.absent.substr(0, env.absent.find(" (")));
    if (!env.absent.empty()) {
      row["status"] = env.absent;
      result.rows.push_back(row);
      result.table.add({env.name, "-", env.absent, "", ""});
      seconds.y.push_back(NAN);
      continue;
    }
    std::fprintf(stderr, "envs: %s (%s) ...\n", env.name.c_str(), device_list(env.devices).c_str());
    json r = run_child("_train", {"--replica-devices", device_list(env.devices), "--model", o.model, "--data", o.data,
                                  "--limit", std::to_string(o.limit), "--test-limit", "-1", "--epochs",
                                  std::to_string(o.epochs), "--batch", std::to_string(o.batch), "--lr",
                                  fmt("%g", o.lr), "--threads", std::to_string(cpu_threads(o))});
    if (failed(r)) {
      row["status"] = "failed";
      row["error"] = r["error"];
      result.rows.push_back(row);
      result.table.add({env.name, device_list(env.devices), "failed: " + r["error"].get<std::string>().substr(0, 100)});
      missing.back() = "failed";
      seconds.y.push_back(NAN);
      continue;
    }
    const double s = r["epoch_seconds_mean"].get<double>();
    if (env.name == "CPU") cpu_seconds = s;
    row["status"] = "measured";
    row["epoch_seconds_mean"] = s;
    row["images_per_second"] = r["epochs"].back()["images_per_second"];
    row["run"] = r;
    result.rows.push_back(row);
    result.table.add({env.name, device_list(env.devices), fmt("%.2f", s),
                      fmt("%.0f", r["epochs"].back()["images_per_second"].get<double>()),
                      std::isnan(cpu_seconds) ? "-" : fmt("%.1fx", cpu_seconds / s)});
    seconds.y.push_back(s);
  }

  result.notes.push_back(fmt("epoch s: training time of one epoch through the prefetching loader (%d CPU math "
                             "threads, 2 loader threads), evaluation excluded",
                             cpu_threads(o)));
  for (const Env& env : envs)
    if (!env.absent.empty()) result.skipped.push_back(env.name + ": " + env.absent);

  note_unused(o, {"--steps", "--warmup", "--batches"}, result);

  PlotSpec spec{fmt("%s: seconds per epoch (log scale; missing bars: not present or not run)", o.model.c_str()), "",
                "seconds per epoch"};
  spec.logy = true;
  result.png = plot_bars(png_path(o), spec, labels, {seconds}, result.notes, missing);
  return result;
}

}  // namespace lockstep::bench
