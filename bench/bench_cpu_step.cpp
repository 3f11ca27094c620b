// One training step (forward, backward, BN statistics, SGD update) of a model
// on the CPU, ours beside PyTorch's on the same model, batch and thread count:
//
//   bench_cpu_step [--model resnet20] [--batch 64] [--input 3x32x32] [--classes 10]
//                  [--steps 10] [--warmup 3] [--threads N] [--memory-format F] [--peer]
//                  [--rounds R] [--json PATH]
//
// Ours runs through a ReplicaManager with one CPU replica on a fixed random
// batch; a round's figure is the median step time after its warm-up steps.
// With --peer, bench/peers/pytorch_train.py runs the same configuration with
// /usr/bin/python3 (Debian's torch), and the two engines take turns, A/B/A/B
// over R rounds (default 5): a machine whose speed drifts (another job, the
// hypervisor, the clock) moves both sides of a round alike, where one run of
// each measured minutes apart moved PyTorch's time by up to 1.9x. The result
// is the median of the rounds' ratios, with their smallest and largest. Threads:
// lockstep's CPU compute pool on our side (every loop and GEMM, OpenBLAS one
// thread per call inside it), and torch.set_num_threads on PyTorch's (its
// intra-op pool, BLAS and oneDNN included); both get --threads, by default
// the number of hardware threads. --memory-format lays our activations out
// as given (nchw or nhwc); not given, the CPU's default format
// (runtime/memory_format_option.h), which the JSON names.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "bench/support/args.h"
#include "bench/support/machine.h"
#include "bench/support/median.h"
#include "distributed/replica_manager.h"
#include "kernels/cpu/thread_pool.h"
#include "layers/graph.h"
#include "layers/models.h"
#include "runtime/memory_format_option.h"

using namespace lockstep;
using json = nlohmann::json;

namespace {

struct Options {
  std::string model = "resnet20";
  int64_t batch = 64;
  Shape input{3, 32, 32};
  int64_t classes = 10;
  int steps = 10;
  int warmup = 3;
  int threads = 0;  // 0: hardware threads
  std::optional<MemoryFormat> memory_format;  // not given: the CPU's default
  bool peer = false;
  int rounds = 0;  // 0: 5 with --peer, else 1
  std::string python = "/usr/bin/python3";
  std::string peer_script = LOCKSTEP_SOURCE_DIR "/bench/peers/pytorch_train.py";
  std::string json_path = "bench_cpu_step.json";
};

void usage() {
  std::cout << "usage: bench_cpu_step [--model NAME] [--batch B] [--input CxHxW] [--classes K] [--steps N]\n"
               "                      [--warmup N] [--threads T] [--memory-format nchw|nhwc] [--peer]\n"
               "                      [--rounds R] [--python PATH] [--peer-script PATH] [--json PATH]\n";
}

Options parse(int argc, char** argv) {
  Options o;
  bench::parse_args(argc, argv, 1, "--help", usage, [&](const std::string& a, const bench::ArgValue& value) {
    if (a == "--model") o.model = value();
    else if (a == "--batch") o.batch = bench::parse_int(a, value());
    else if (a == "--input") o.input = bench::parse_shape(value());
    else if (a == "--classes") o.classes = bench::parse_int(a, value());
    else if (a == "--steps") o.steps = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--warmup") o.warmup = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--threads") o.threads = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--memory-format") o.memory_format = parse_memory_format(value(), a);
    else if (a == "--peer") o.peer = true;
    else if (a == "--rounds") o.rounds = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--python") o.python = value();
    else if (a == "--peer-script") o.peer_script = value();
    else if (a == "--json") o.json_path = value();
    else return false;
    return true;
  });
  LS_CHECK(o.batch > 0 && o.steps > 0 && o.warmup >= 0, "--batch and --steps must be positive, --warmup >= 0");
  LS_CHECK(o.rounds >= 0, "--rounds must be positive");
  if (o.rounds == 0) o.rounds = o.peer ? 5 : 1;
  if (o.threads <= 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

// A fixed random batch of the configured shape.
HostBatch random_batch(const Options& o) {
  std::mt19937 gen(0);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(o.classes - 1));
  std::vector<float> images(o.batch * o.input.numel());
  std::vector<int32_t> labels(o.batch);
  for (float& v : images) v = normal(gen);
  for (int32_t& v : labels) v = label(gen);
  return HostBatch{Tensor::from_vector(Shape{o.batch, o.input[0], o.input[1], o.input[2]}, images),
                   Tensor::from_labels(labels), o.batch};
}

// One round of ours: warm-up steps, then the timed ones, on a replica built
// once for all rounds (PyTorch's side is a new process each round, and warms
// up the same way).
json run_ours(const Options& o, ReplicaManager& manager, const HostBatch& batch) {
  const SgdConfig sgd{0.9f, 5e-4f, false};
  for (int i = 0; i < o.warmup; ++i) manager.train_step(batch, 0.05f, sgd);
  manager.reset_phase_times();
  std::vector<double> times;
  StepMetrics last;
  for (int i = 0; i < o.steps; ++i) {
    auto start = std::chrono::steady_clock::now();
    last = manager.train_step(batch, 0.05f, sgd);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const PhaseTimes& p = manager.phase_times();
  const double med = bench::median(times);
  int64_t params = 0;
  for (const ParamEntry& e : manager.model(0).arenas().entries()) params += e.shape.numel();
  return json{{"framework", "lockstep"},
              {"model", o.model},
              {"batch", o.batch},
              {"device", "cpu"},
              {"threads", cpu::compute_threads()},
              {"memory_format", memory_format_name(dynamic_cast<Graph&>(manager.model(0)).activation_format())},
              {"blas", openblas_get_config()},
              {"parameters", params},
              {"warmup", o.warmup},
              {"steps", o.steps},
              {"step_seconds", times},
              {"step_seconds_median", med},
              {"images_per_second", double(o.batch) / med},
              {"phase_seconds_mean",
               {{"forward", p.forward / p.steps},
                {"backward", p.backward / p.steps},
                {"update", p.update / p.steps},
                {"other", p.data / p.steps + p.communication / p.steps}}},
              {"last_loss", last.loss_sum / double(last.count)}};
}

// Runs the PyTorch peer and returns its JSON (the last line it prints).
json run_peer(const Options& o) {
  std::ostringstream cmd;
  cmd << o.python << " " << o.peer_script << " --model " << o.model << " --batch " << o.batch << " --input "
      << o.input[0] << "x" << o.input[1] << "x" << o.input[2] << " --classes " << o.classes << " --steps " << o.steps
      << " --warmup " << o.warmup << " --threads " << o.threads << " --device cpu";
  FILE* pipe = popen(cmd.str().c_str(), "r");
  LS_CHECK(pipe != nullptr, "cannot start the PyTorch peer: ", cmd.str());
  std::string output, line;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) output += buf;
  int status = pclose(pipe);
  LS_CHECK(status == 0, "the PyTorch peer failed (status ", status, "): ", cmd.str());
  std::istringstream lines(output);
  std::string last;
  while (std::getline(lines, line))
    if (!line.empty()) last = line;
  try {
    return json::parse(last);
  } catch (const json::exception& e) {
    LS_FAIL("the PyTorch peer printed no JSON (", e.what(), "): ", output);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = parse(argc, argv);
    std::cerr << "lockstep: " << o.model << ", batch " << o.batch << ", " << o.threads << " thread(s), " << o.warmup
              << " warm-up + " << o.steps << " timed steps\n";
    cpu::set_compute_threads(o.threads);  // our pool; OpenBLAS one thread per call inside it
    const std::string spec = model_spec(o.model, o.input, o.classes, {});
    ReplicaOptions options;
    options.context.memory_format = o.memory_format;
    ReplicaManager manager([&](Device d) { return build_model_from_spec(spec, d, 1); }, {Device::cpu()}, options);
    const HostBatch batch = random_batch(o);
    // The engines take turns; each round's figures, then the median over rounds.
    json ours, peer, rounds = json::array();
    std::vector<double> ours_medians, peer_medians, ratios;
    for (int r = 0; r < o.rounds; ++r) {
      std::cerr << "round " << r + 1 << " of " << o.rounds << ": lockstep" << (o.peer ? ", then pytorch" : "")
                << "\n";
      ours = run_ours(o, manager, batch);
      ours_medians.push_back(ours["step_seconds_median"].get<double>());
      json round{{"lockstep_step_seconds_median", ours_medians.back()}};
      if (o.peer) {
        peer = run_peer(o);
        peer_medians.push_back(peer["step_seconds_median"].get<double>());
        ratios.push_back(ours_medians.back() / peer_medians.back());
        round["pytorch_step_seconds_median"] = peer_medians.back();
        round["ratio_lockstep_over_pytorch"] = ratios.back();
      }
      rounds.push_back(round);
    }
    // The last round's details (phases, loss), with the step time of all rounds.
    ours["step_seconds_median"] = bench::median(ours_medians);
    ours["images_per_second"] = double(o.batch) / bench::median(ours_medians);
    const bench::CpuMachine machine = bench::read_cpu_machine();
    json result{{"benchmark", "cpu_step"},
                {"machine", bench::machine_json(machine)},
                {"rounds", rounds},
                {"lockstep", ours}};
    if (o.peer) {
      peer["step_seconds_median"] = bench::median(peer_medians);
      peer["images_per_second"] = double(o.batch) / bench::median(peer_medians);
      result["pytorch"] = peer;
      result["ratio_lockstep_over_pytorch"] = bench::median(ratios);
      result["ratio_lockstep_over_pytorch_min"] = *std::min_element(ratios.begin(), ratios.end());
      result["ratio_lockstep_over_pytorch_max"] = *std::max_element(ratios.begin(), ratios.end());
    }

    std::printf("\n%s, batch %ld of %ldx%ldx%ld, CPU, %d thread(s) each (lockstep compute pool / torch.set_num_threads)\n\n",
                o.model.c_str(), long(o.batch), long(o.input[0]), long(o.input[1]), long(o.input[2]), o.threads);
    std::printf("| engine | step (median of %d round(s)) | images/s | time vs PyTorch (median of rounds, range) |\n"
                "|---|---:|---:|---:|\n",
                o.rounds);
    auto row = [&](const std::string& name, double seconds, const std::string& ratio) {
      std::printf("| %s | %.1f ms | %.1f | %s |\n", name.c_str(), seconds * 1e3, double(o.batch) / seconds,
                  ratio.c_str());
    };
    std::string ratio;
    if (o.peer) {
      char b[64];
      std::snprintf(b, sizeof b, "%.2fx (%.2f-%.2fx)", result["ratio_lockstep_over_pytorch"].get<double>(),
                    result["ratio_lockstep_over_pytorch_min"].get<double>(),
                    result["ratio_lockstep_over_pytorch_max"].get<double>());
      ratio = b;
    }
    row("lockstep", ours["step_seconds_median"].get<double>(), ratio);
    if (o.peer)
      row("PyTorch " + peer["torch_version"].get<std::string>(), peer["step_seconds_median"].get<double>(), "");
    std::printf("\n%s\n", bench::machine_line(machine).c_str());
    const json& ph = ours["phase_seconds_mean"];
    std::printf("\nlockstep phases (mean): forward %.1f ms, backward %.1f ms, update %.1f ms\n",
                ph["forward"].get<double>() * 1e3, ph["backward"].get<double>() * 1e3,
                ph["update"].get<double>() * 1e3);

    std::ofstream out(o.json_path);
    LS_CHECK(out.good(), "cannot write ", o.json_path);
    out << result.dump(2) << "\n";
    std::printf("wrote %s\n", o.json_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_cpu_step: " << e.what() << "\n";
    return 1;
  }
}
