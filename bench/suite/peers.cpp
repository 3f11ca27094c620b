// peers: our training step against PyTorch's (bench/peers/pytorch_train.py,
// run with the system Python) on the same model, batch and synthetic data, in
// the same run, reported as our images/s over PyTorch's. The two networks are
// checked to be the same by their parameter counts, which the peer reports.
// On a GPU PyTorch runs with cuDNN benchmark mode, with and without
// channels_last; on the CPU both sides get the same number of threads.
#include <cmath>
#include <cstdio>

#include "child.h"
#include "base/error.h"
#include "plot.h"
#include "suites.h"

namespace lockstep::bench {

SuiteResult run_peers(const Options& given) {
  Options o = given;
  const std::vector<Device> devices = resolve_devices(o.devices);
  // The CPU when selected, and the first GPU selected.
  std::vector<Device> targets;
  for (const Device& d : devices)
    if (d.is_cpu() || std::none_of(targets.begin(), targets.end(), [](const Device& t) { return t.is_cuda(); }))
      targets.push_back(d);
  const bool gpu = any_gpu(targets);
  if (o.model.empty()) o.model = gpu ? "resnet18" : (o.quick ? "simple-cnn" : "resnet20");
  if (o.input.empty()) o.input = o.quick && !gpu ? "1x28x28" : "3x32x32";
  if (o.batch == 0) o.batch = gpu ? 256 : (o.quick ? 32 : 64);
  if (o.steps == 0) o.steps = gpu ? 30 : (o.quick ? 5 : 10);
  if (o.warmup < 0) o.warmup = gpu ? 10 : (o.quick ? 2 : 3);
  if (o.peer_script.empty()) o.peer_script = LOCKSTEP_SOURCE_DIR "/bench/peers/pytorch_train.py";
  const int threads = cpu_threads(o);

  SuiteResult result;
  result.title = fmt("peers: %s, batch %lld of synthetic %s images, %d timed steps after %d warm-up (median), "
                     "lockstep against PyTorch in the same run",
                     o.model.c_str(), static_cast<long long>(o.batch), o.input.c_str(), o.steps, o.warmup);
  result.settings = {{"model", o.model},         {"input", o.input},   {"classes", o.classes},
                     {"batch", o.batch},         {"steps", o.steps},   {"warmup", o.warmup},
                     {"threads", threads},       {"python", o.python}, {"peer_script", o.peer_script},
                     {"devices", device_list(targets)}, {"tf32", o.tf32}, {"quick", o.quick}};
  result.table = Table({"device", "engine", "settings", "parameters", "step ms", "images/s", "lockstep / PyTorch"});

  // Whether the interpreter can run the peer at all, so that a missing torch
  // reads as such rather than as a failed run.
  json probe = run_json_command({o.python, "-c", "import json, torch; print(json.dumps({'torch': torch.__version__}))"});
  const bool have_torch = !failed(probe);
  result.settings["torch"] = have_torch ? probe["torch"] : json(nullptr);
  if (!have_torch)
    result.skipped.push_back("PyTorch rows: " + o.python + " cannot import torch (Debian: python3-torch; or --python)");

  std::vector<std::string> labels;
  Series bars{"images/s", {}, {}};
  for (const Device& device : targets) {
    std::fprintf(stderr, "peers: lockstep on %s ...\n", device.str().c_str());
    Options ours_options = o;
    ours_options.threads = threads;
    json ours = run_child("_steps", step_flags(ours_options, {device}, o.batch));
    const std::string ours_settings =
        device.is_cpu() ? fmt("%d OpenBLAS threads", threads) : (o.tf32 ? "NCHW, TF32 allowed" : "NCHW, FP32");
    if (failed(ours)) {
      result.rows.push_back({{"device", device.str()}, {"engine", "lockstep"}, {"error", ours["error"]}});
      result.table.add({device.str(), "lockstep", ours_settings, "", "failed: " + ours["error"].get<std::string>().substr(0, 100)});
      continue;
    }
    const double ours_ips = ours["images_per_second"].get<double>();
    const int64_t ours_params = ours["parameters"].get<int64_t>();
    result.rows.push_back({{"device", device.str()}, {"engine", "lockstep"}, {"settings", ours_settings},
                           {"images_per_second", ours_ips}, {"measurement", ours}});
    result.table.add({device.str(), "lockstep", ours_settings, std::to_string(ours_params),
                      ms_text(ours["step_seconds_median"].get<double>()), fmt("%.1f", ours_ips), ""});
    labels.push_back(device.str() + " lockstep");
    bars.y.push_back(ours_ips);

    // PyTorch: once on the CPU; on a GPU without and with channels_last.
    std::vector<bool> layouts = device.is_cpu() ? std::vector<bool>{false} : std::vector<bool>{false, true};
    for (bool channels_last : have_torch ? layouts : std::vector<bool>{}) {
      std::vector<std::string> argv{o.python,      o.peer_script, "--model",   o.model,
                                    "--batch",     std::to_string(o.batch), "--input", o.input,
                                    "--classes",   std::to_string(o.classes), "--steps", std::to_string(o.steps),
                                    "--warmup",    std::to_string(o.warmup), "--device", device.is_cpu() ? "cpu" : "cuda",
                                    "--tf32",      o.tf32 ? "on" : "off"};
      if (device.is_cpu()) argv.insert(argv.end(), {"--threads", std::to_string(threads)});
      if (channels_last) argv.push_back("--channels-last");
      std::vector<std::pair<std::string, std::string>> env{{"PYTHONDONTWRITEBYTECODE", "1"}};
      if (device.is_cuda()) env.push_back({"CUDA_VISIBLE_DEVICES", std::to_string(device.index)});
      std::fprintf(stderr, "peers: PyTorch on %s%s ...\n", device.str().c_str(), channels_last ? ", channels_last" : "");
      json peer = run_json_command(argv, env);
      std::string settings = device.is_cpu() ? fmt("torch.set_num_threads(%d)", threads)
                                             : std::string(channels_last ? "channels_last" : "NCHW") +
                                                   ", cudnn.benchmark" + (o.tf32 ? ", TF32 allowed" : ", FP32");
      if (failed(peer)) {
        result.rows.push_back({{"device", device.str()}, {"engine", "pytorch"}, {"settings", settings},
                               {"error", peer["error"]}});
        result.table.add({device.str(), "PyTorch", settings, "", "",
                          "failed: " + peer["error"].get<std::string>().substr(0, 100), ""});
        continue;
      }
      const double peer_ips = peer["images_per_second"].get<double>();
      const int64_t peer_params = peer["parameters"].get<int64_t>();
      const bool same = peer_params == ours_params;
      if (device.is_cpu()) settings += fmt(" (reports %d)", peer["threads"].get<int>());
      result.rows.push_back({{"device", device.str()},
                             {"engine", "pytorch"},
                             {"settings", settings},
                             {"images_per_second", peer_ips},
                             {"same_parameter_count", same},
                             {"lockstep_over_pytorch", ours_ips / peer_ips},
                             {"measurement", peer}});
      result.table.add({device.str(), "PyTorch " + peer["torch_version"].get<std::string>(), settings,
                        std::to_string(peer_params) + (same ? "" : " (DIFFERS)"),
                        ms_text(peer["step_seconds_median"].get<double>()), fmt("%.1f", peer_ips),
                        fmt("%.2fx", ours_ips / peer_ips)});
      if (!same)
        result.notes.push_back(fmt("parameter counts differ on %s: lockstep %lld, PyTorch %lld: not the same network",
                                   device.str().c_str(), static_cast<long long>(ours_params),
                                   static_cast<long long>(peer_params)));
      labels.push_back(device.str() + " PyTorch" + (channels_last ? " NHWC" : ""));
      bars.y.push_back(peer_ips);
    }
  }

  result.notes.push_back("lockstep / PyTorch: our images/s over PyTorch's (above 1: lockstep is faster); a step is "
                         "forward, loss, backward and the SGD-momentum update (weight decay on conv/linear weights)");
  if (std::any_of(targets.begin(), targets.end(), [](const Device& d) { return d.is_cpu(); }))
    result.notes.push_back(fmt("CPU threads: %d on each side: lockstep's OpenBLAS pool (its other CPU loops are "
                               "single-threaded) and PyTorch's torch.set_num_threads (intra-op pool, BLAS and oneDNN)",
                               threads));
  if (!gpu)
    result.skipped.push_back(cuda_device_count() == 0 ? "GPU rows (cuDNN benchmark, channels_last): no GPU on this machine"
                                                      : "GPU rows: --devices selects no GPU");

  note_unused(o, {"--batches", "--epochs"}, result);

  PlotSpec spec{fmt("%s, batch %lld: training images/s", o.model.c_str(), static_cast<long long>(o.batch)), "",
                "images/s"};
  result.png = plot_bars(png_path(o), spec, labels, {bars}, result.notes);
  return result;
}

}  // namespace lockstep::bench
