// peers: our training step against PyTorch's (bench/peers/pytorch_train.py,
// run with the Python that has torch: see find_peer_python) on the same model, batch and synthetic data, in
// the same run, reported as our images/s over PyTorch's. The two networks are
// checked to be the same by their parameter counts, which the peer reports.
// On a GPU PyTorch runs with cuDNN benchmark mode, with and without
// channels_last (bf16: AMP and channels_last), then channels_last with the
// whole step replayed from a CUDA graph, then through torch.compile where the
// installed torch has it; lockstep runs its step as `lockstep train` does
// (replayed from a CUDA graph on a GPU; --eager: the eager step); on the CPU both sides get the same
// number of threads. --precision bf16 runs lockstep's bf16 mode: on a GPU
// with bf16 activations, channels-last, as the AMP peer; on the CPU by
// rounding to bf16 in fp32 storage (a reference, not a speed mode). On a GPU
// every measured step is also given over the roofline bound (gpu_peaks.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "child.h"
#include "gpu_peaks.h"
#include "base/error.h"
#include "runtime/memory_format_option.h"
#include "plot.h"
#include "suites.h"

namespace lockstep::bench {

namespace {

// The interpreter of the PyTorch rows: --python as given, else the first of
// $LOCKSTEP_PEER_PYTHON, python3 on PATH and /usr/bin/python3 that imports
// torch, one whose torch sees CUDA first when a GPU is measured (a GPU
// machine's PyTorch is often not the system Python's). `tried` says why each
// one before it was passed over, for the rows' absence to name.
struct PeerPython {
  std::string path;  // empty: none imports torch
  json torch;        // {"torch": version, "cuda": bool} of the chosen one
  std::vector<std::string> tried;
};

PeerPython find_peer_python(const std::string& given, bool want_cuda) {
  std::vector<std::string> candidates;
  if (!given.empty()) candidates = {given};
  else {
    if (const char* env = std::getenv("LOCKSTEP_PEER_PYTHON"); env != nullptr && *env != '\0')
      candidates.push_back(env);
    for (const char* c : {"python3", "/usr/bin/python3"})
      if (std::find(candidates.begin(), candidates.end(), c) == candidates.end()) candidates.push_back(c);
  }
  PeerPython found;
  PeerPython without_cuda;
  for (const std::string& python : candidates) {
    json probe = run_json_command(
        {python, "-c", "import json, torch; print(json.dumps({'torch': torch.__version__, 'cuda': torch.cuda.is_available()}))"});
    if (failed(probe)) {
      found.tried.push_back(python + ": cannot import torch (" + probe["error"].get<std::string>().substr(0, 80) + ")");
      continue;
    }
    if (want_cuda && !probe.value("cuda", false)) {
      found.tried.push_back(python + ": torch " + probe["torch"].get<std::string>() + " sees no CUDA device");
      if (without_cuda.path.empty()) without_cuda = {python, probe, {}};
      continue;
    }
    found.path = python;
    found.torch = probe;
    return found;
  }
  if (!without_cuda.path.empty()) {
    without_cuda.tried = found.tried;
    return without_cuda;
  }
  return found;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : "; ") + p;
  return text;
}

}  // namespace

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
  const std::string prec = precision(o);
  const bool bf16 = prec == "bf16";

  SuiteResult result;
  result.title = fmt("peers: %s, batch %lld of synthetic %s images, %d timed steps after %d warm-up (median), "
                     "lockstep against PyTorch in the same run",
                     o.model.c_str(), static_cast<long long>(o.batch), o.input.c_str(), o.steps, o.warmup);
  result.settings = {{"model", o.model},         {"input", o.input},   {"classes", o.classes},
                     {"batch", o.batch},         {"steps", o.steps},   {"warmup", o.warmup},
                     {"threads", threads},       {"python", o.python}, {"peer_script", o.peer_script},
                     {"devices", device_list(targets)}, {"tf32", o.tf32}, {"precision", prec},
                     {"quick", o.quick}, {"no_compile", o.no_compile}};
  result.table = Table({"device", "engine", "settings", "parameters", "step ms", "images/s", "lockstep / PyTorch",
                        "step / bound"});
  // Measured step time over the roofline bound of this model and batch on
  // this GPU (a bound from published peaks); not applicable on the CPU.
  auto over_bound = [&](const Device& device, double step_seconds, json& row) -> std::string {
    if (device.is_cpu()) return "n/a (CPU)";
    const json bound = bound_for_device(o.model, o.input, o.classes, o.batch, prec,
                                        cuda_devices().at(static_cast<size_t>(device.index)).name);
    row["roofline"] = bound;
    if (bound.contains("not_applicable")) return "n/a";
    const double ratio = step_seconds / bound["bound_seconds"].get<double>();
    row["step_over_bound"] = ratio;
    return fmt("%.2fx", ratio);
  };

  // Whether an interpreter can run the peer at all, so that a missing torch
  // reads as such rather than as a failed run, never as rows silently absent.
  const PeerPython peer_python = find_peer_python(o.python, gpu);
  const bool have_torch = !peer_python.path.empty();
  o.python = peer_python.path;
  result.settings["python"] = have_torch ? json(o.python) : json(nullptr);
  result.settings["torch"] = have_torch ? peer_python.torch["torch"] : json(nullptr);
  if (!peer_python.tried.empty()) result.settings["python_passed_over"] = peer_python.tried;
  if (!have_torch)
    result.skipped.push_back("PyTorch rows: no interpreter imports torch (" + joined(peer_python.tried) +
                             "; set LOCKSTEP_PEER_PYTHON or --python)");
  if (have_torch && gpu && o.no_compile) result.skipped.push_back("PyTorch torch.compile rows: --no-compile");
  if (have_torch && gpu && !peer_python.torch.value("cuda", false))
    result.skipped.push_back("PyTorch rows on GPUs: " + o.python + "'s torch sees no CUDA device (" +
                             joined(peer_python.tried) + "; set LOCKSTEP_PEER_PYTHON or --python)");

  std::vector<std::string> labels;
  Series bars{"images/s", {}, {}};
  for (const Device& device : targets) {
    // The layout lockstep's step runs in: --memory-format, else the library's default.
    ContextOptions context;
    context.precision = parse_precision(prec);
    if (!o.memory_format.empty()) context.memory_format = parse_memory_format(o.memory_format);
    const std::string layout = resolve_memory_format(context, device) == MemoryFormat::nhwc ? "NHWC" : "NCHW";
    std::string ours_settings = device.is_cpu()
                                          ? fmt("%d compute threads, %s", threads,
                                                bf16 ? "bf16 rounded in fp32 storage" : "fp32")
                                          : bf16 ? layout + ", bf16 activations, FP32 master weights"
                                          : layout + (prec == "tf32" ? ", TF32 allowed" : ", FP32");
    double ours_ips = NAN;
    int64_t ours_params = -1;
    std::fprintf(stderr, "peers: lockstep on %s ...\n", device.str().c_str());
    Options ours_options = o;
    ours_options.threads = threads;
    json ours = run_child("_steps", step_flags(ours_options, {device}, o.batch));
    if (failed(ours)) {
      result.rows.push_back({{"device", device.str()}, {"engine", "lockstep"}, {"error", ours["error"]}});
      result.table.add({device.str(), "lockstep", ours_settings, "", "",
                        "failed: " + ours["error"].get<std::string>().substr(0, 100), "", ""});
      continue;
    }
    if (ours.value("step", "") == "graphed") ours_settings += ", CUDA graph";
    ours_ips = ours["images_per_second"].get<double>();
    ours_params = ours["parameters"].get<int64_t>();
    json row{{"device", device.str()}, {"engine", "lockstep"}, {"settings", ours_settings}, {"precision", prec},
             {"images_per_second", ours_ips}, {"measurement", ours}};
    const std::string vs_bound = over_bound(device, ours["step_seconds_median"].get<double>(), row);
    result.rows.push_back(row);
    result.table.add({device.str(), "lockstep", ours_settings, std::to_string(ours_params),
                      ms_text(ours["step_seconds_median"].get<double>()), fmt("%.1f", ours_ips), "", vs_bound});
    labels.push_back(device.str() + " lockstep");
    bars.y.push_back(ours_ips);

    // PyTorch: eager once on the CPU; on a GPU without and with channels_last
    // (bf16: AMP with channels_last only), then compiled where torch has
    // torch.compile (on a GPU: compiling takes minutes on a CPU).
    struct PeerRun {
      bool channels_last, compile, graph = false;
    };
    std::vector<PeerRun> runs;
    if (device.is_cpu()) runs = {{bf16, false}};
    else if (bf16) runs = {{true, false}, {true, false, true}, {true, true}};
    else runs = {{false, false}, {true, false}, {true, false, true}, {true, true}};
    if (o.no_compile) std::erase_if(runs, [](const PeerRun& r) { return r.compile; });
    for (const PeerRun& run : have_torch ? runs : std::vector<PeerRun>{}) {
      const bool channels_last = run.channels_last;
      std::vector<std::string> argv{o.python,      o.peer_script, "--model",   o.model,
                                    "--batch",     std::to_string(o.batch), "--input", o.input,
                                    "--classes",   std::to_string(o.classes), "--steps", std::to_string(o.steps),
                                    "--warmup",    std::to_string(o.warmup), "--device", device.is_cpu() ? "cpu" : "cuda",
                                    "--precision", prec};
      if (device.is_cpu()) argv.insert(argv.end(), {"--threads", std::to_string(threads)});
      if (channels_last) argv.push_back("--channels-last");
      if (run.compile) argv.push_back("--compile");
      if (run.graph) argv.push_back("--cuda-graph");
      std::vector<std::pair<std::string, std::string>> env{{"PYTHONDONTWRITEBYTECODE", "1"}};
      if (device.is_cuda()) env.push_back({"CUDA_VISIBLE_DEVICES", std::to_string(device.index)});
      std::fprintf(stderr, "peers: PyTorch on %s%s%s%s ...\n", device.str().c_str(),
                   channels_last ? ", channels_last" : "", run.compile ? ", torch.compile" : "",
                   run.graph ? ", CUDA graph" : "");
      json peer = run_json_command(argv, env);
      std::string settings =
          (device.is_cpu() ? fmt("torch.set_num_threads(%d)", threads) + (channels_last ? ", channels_last" : "")
                           : std::string(channels_last ? "channels_last" : "NCHW") + ", cudnn.benchmark") +
          (bf16 ? ", AMP bf16" : prec == "tf32" ? ", TF32 (PyTorch's default)" : ", FP32") +
          (run.compile ? ", torch.compile" : "") + (run.graph ? ", CUDA graph" : "");
      if (failed(peer) && peer.contains("unavailable")) {
        result.skipped.push_back("PyTorch " + settings + " on " + device.str() + ": " +
                                 peer["error"].get<std::string>());
        continue;
      }
      if (failed(peer)) {
        result.rows.push_back({{"device", device.str()}, {"engine", "pytorch"}, {"settings", settings},
                               {"error", peer["error"]}});
        result.table.add({device.str(), "PyTorch", settings, "", "",
                          "failed: " + peer["error"].get<std::string>().substr(0, 100), "", ""});
        continue;
      }
      const double peer_ips = peer["images_per_second"].get<double>();
      const int64_t peer_params = peer["parameters"].get<int64_t>();
      // Without a lockstep row (bf16) there is nothing to compare the count or the speed with.
      const bool measured_ours = ours_params >= 0;
      const bool same = !measured_ours || peer_params == ours_params;
      if (device.is_cpu()) settings += fmt(" (reports %d)", peer["threads"].get<int>());
      json row{{"device", device.str()},
               {"engine", "pytorch"},
               {"settings", settings},
               {"precision", prec},
               {"compiled", run.compile},
               {"cuda_graph", run.graph},
               {"images_per_second", peer_ips},
               {"same_parameter_count", measured_ours ? json(same) : json(nullptr)},
               {"lockstep_over_pytorch", measured_ours ? json(ours_ips / peer_ips) : json(nullptr)},
               {"measurement", peer}};
      const std::string vs_bound = over_bound(device, peer["step_seconds_median"].get<double>(), row);
      result.rows.push_back(row);
      result.table.add({device.str(), "PyTorch " + peer["torch_version"].get<std::string>(), settings,
                        std::to_string(peer_params) + (same ? "" : " (DIFFERS)"),
                        ms_text(peer["step_seconds_median"].get<double>()), fmt("%.1f", peer_ips),
                        measured_ours ? fmt("%.2fx", ours_ips / peer_ips) : "-", vs_bound});
      if (!same)
        result.notes.push_back(fmt("parameter counts differ on %s: lockstep %lld, PyTorch %lld: not the same network",
                                   device.str().c_str(), static_cast<long long>(ours_params),
                                   static_cast<long long>(peer_params)));
      labels.push_back(device.str() + " PyTorch" + (channels_last ? " NHWC" : "") + (run.compile ? " compiled" : "") +
                       (run.graph ? " graphed" : ""));
      bars.y.push_back(peer_ips);
    }
  }

  result.notes.push_back("lockstep / PyTorch: our images/s over PyTorch's (above 1: lockstep is faster); a step is "
                         "forward, loss, backward and the SGD-momentum update (weight decay on conv/linear weights)");
  if (std::any_of(targets.begin(), targets.end(), [](const Device& d) { return d.is_cpu(); }))
    result.notes.push_back(fmt("CPU threads: %d on each side: lockstep's compute pool (oneDNN's OpenMP team where "
                               "lockstep is built with oneDNN) and PyTorch's torch.set_num_threads (intra-op pool, BLAS "
                               "and oneDNN)",
                               threads));
  if (gpu)
    result.notes.push_back("step / bound: the measured median step over the roofline bound of this model, batch and "
                           "precision on this GPU (lockstep-bench roofline: published peaks, a bound, not a "
                           "measurement); at least 1 by construction");
  else
    result.notes.push_back("step / bound: not applicable on the CPU (the roofline bound is drawn for GPUs)");
  if (bf16)
    result.notes.push_back("bf16: PyTorch runs AMP (autocast bfloat16, no loss scaling) with channels_last; lockstep "
                           "runs its bf16 mode, on a GPU with bf16 activations laid out channels-last (NHWC), on the "
                           "CPU by rounding to bf16 where a GPU would store it, in fp32 storage (a reference, not a "
                           "speed mode)");
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
