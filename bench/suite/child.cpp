#include "child.h"

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "data/loader.h"
#include "data/open_dataset.h"
#include "runtime/memory_format_option.h"
#include "runtime/allocator.h"
#include "base/error.h"
#include "distributed/gradient_buckets.h"
#include "kernels/cpu/thread_pool.h"
#include "training/trainer.h"
#include "layers/models.h"

namespace lockstep::bench {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<Device> distinct(const std::vector<Device>& devices) {
  std::vector<Device> out;
  for (const Device& d : devices)
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  return out;
}

// Peak bytes each device's allocator handed out in this process.
json peak_memory(const std::vector<Device>& devices) {
  json peaks = json::object();
  for (const Device& d : distinct(devices)) peaks[d.str()] = allocator_for(d)->peak_bytes();
  return peaks;
}

// `limit` samples spread evenly over the set, so the class balance stays.
std::shared_ptr<const data::Dataset> limited(std::shared_ptr<const data::Dataset> set, int64_t limit) {
  if (limit <= 0 || limit >= set->size()) return set;
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < limit; ++i) indices.push_back(i * set->size() / limit);
  return std::make_shared<data::Subset>(set, indices, "every " + std::to_string(set->size() / limit) + "th sample");
}

// The CPU's threads are shared out among the replicas on it: the compute pool
// is process-wide, and N replicas each driving T threads on T cores would
// oversubscribe them.
int blas_threads(const Options& o, const std::vector<Device>& devices) {
  const int cpu_replicas = static_cast<int>(std::count_if(devices.begin(), devices.end(), [](const Device& d) { return d.is_cpu(); }));
  const int threads = std::max(1, cpu_threads(o) / std::max(1, cpu_replicas));
  cpu::set_compute_threads(threads);
  return threads;
}

std::string quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

json measure_steps(const Options& o, std::shared_ptr<ProcessGroup> processes) {
  const std::vector<Device> devices = parse_device_list(o.replica_devices);
  int threads = blas_threads(o, devices);
  if (processes) {
    // The processes on one host share its threads too.
    threads = std::max(1, threads / processes->processes_on_host());
    cpu::set_compute_threads(threads);
  }
  const Shape input = parse_shape(o.input);
  const int64_t global = o.batch;
  LS_CHECK(global > 0 && o.steps > 0, "_steps needs --batch and --steps");
  const std::string spec = model_spec(o.model, input, o.classes, {});
  ReplicaOptions options;
  // The eager step waits for the device between its phases, so each phase's
  // clock holds its own work; the default is the step as lockstep train runs
  // it, replayed from a CUDA graph where the replicas allow one (a replayed
  // step's device time all counts as forward).
  options.context.sync_timing = o.eager;
  options.cuda_graphs = !o.eager;
  // bf16 on a GPU runs the library's bf16 path (bf16 activations), never an
  // fp32 step under a bf16 label, in the library's default memory format:
  // channels-last there (default_memory_format), as the PyTorch AMP peer
  // (and cuDNN's tensor-core kernels) lay the images out.
  options.context.precision = parse_precision(precision(o));
  if (!o.memory_format.empty()) options.context.memory_format = parse_memory_format(o.memory_format);
  options.processes = processes;
  ReplicaManager manager([&](Device d) { return build_model_from_spec(spec, d, 1); }, devices, options);

  // Synthetic data, in pinned host memory as the loader would hand it over.
  auto pinned = pinned_host_allocator();
  Tensor images = Tensor::empty_with(Shape{global, input[0], input[1], input[2]}, pinned);
  Tensor labels = Tensor::empty_with(Shape{global}, pinned, DType::i32);
  std::mt19937 gen(0);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(o.classes - 1));
  for (int64_t i = 0; i < images.numel(); ++i) images.data()[i] = normal(gen);
  for (int64_t i = 0; i < global; ++i) labels.labels()[i] = label(gen);
  HostBatch batch;
  batch.images = images;
  batch.labels = labels;
  batch.count = global;

  const SgdConfig sgd{0.9f, 5e-4f, false};
  const float lr = 0.01f;
  for (int i = 0; i < std::max(o.warmup, 0); ++i) manager.train_step(batch, lr, sgd);
  manager.reset_phase_times();
  std::vector<double> times;
  StepMetrics last;
  for (int i = 0; i < o.steps; ++i) {
    auto start = Clock::now();
    last = manager.train_step(batch, lr, sgd);
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const PhaseTimes& p = manager.phase_times();
  const double steps = static_cast<double>(std::max<int64_t>(p.steps, 1));
  const double med = median(times);

  ParameterArenas& arenas = manager.model(0).arenas();
  int64_t parameters = 0;
  for (const ParamEntry& e : arenas.entries()) parameters += e.shape.numel();
  json buckets = json::array();
  for (const Bucket& b : make_gradient_buckets(arenas, options.bucket_bytes, options.first_bucket_bytes))
    buckets.push_back(b.end - b.begin);

  return json{{"replica_devices", o.replica_devices},
              {"replicas", devices.size()},
              {"processes", processes ? processes->size() : 1},
              {"model", o.model},
              {"spec", spec},
              {"global_batch", global},
              {"cpu_threads", cpu_threads(o)},
              {"blas_threads_per_replica", devices[0].is_cpu() ? json(threads) : json(nullptr)},
              {"parameters", parameters},
              {"arena_elements", arenas.total()},
              {"gradient_bytes", arenas.total() * 4},
              {"bucket_elements", buckets},
              {"warmup", o.warmup},
              {"steps", o.steps},
              {"step_seconds", times},
              {"step_seconds_median", med},
              {"images_per_second", static_cast<double>(global) / med},
              {"phase_seconds_mean",
               {{"data", p.data / steps},
                {"forward", p.forward / steps},
                {"backward", p.backward / steps},
                {"communication", p.communication / steps},
                {"update", p.update / steps}}},
              {"step", manager.graphs_in_use() ? "graphed" : "eager"},
              {"graph_steps", p.graph_steps},
              {"peak_bytes", peak_memory(devices)},
              {"last_loss", last.loss_sum / static_cast<double>(std::max<int64_t>(last.count, 1))}};
}

json train_epochs(const Options& o) {
  const std::vector<Device> devices = parse_device_list(o.replica_devices);
  const int threads = blas_threads(o, devices);
  LS_CHECK(o.batch > 0 && o.epochs > 0, "_train needs --batch and --epochs");
  const std::string path = o.data.empty() ? data::default_data_path() : o.data;
  data::DataSets sets = data::open_dataset(path);
  auto train = limited(sets.train, o.limit);
  // test_limit < 0: no evaluation; 0: the whole test set.
  std::shared_ptr<const data::Dataset> test;
  if (o.test_limit >= 0 && sets.test) test = limited(sets.test, o.test_limit);

  data::LoaderConfig loader_config;
  loader_config.batch_size = o.batch;
  loader_config.seed = 1;
  loader_config.threads = std::max(1, o.loader_threads);
  loader_config.augment_on_device = devices[0].is_cuda();  // as lockstep train's batches
  data::Loader loader(train, loader_config);
  std::unique_ptr<data::Loader> test_loader;
  if (test)
    test_loader = data::make_eval_loader(test, std::max<int64_t>(o.batch, 256), loader.normalization(),
                                         loader_config.threads);

  const std::string spec = model_spec(o.model, train->sample_shape(), train->num_classes(), {});
  ReplicaOptions options;
  options.seed = 1;
  ReplicaManager manager([&](Device d) { return build_model_from_spec(spec, d, 1); }, devices, options);
  TrainerConfig config;
  config.epochs = o.epochs;
  config.schedule.kind = ScheduleKind::constant;
  config.schedule.base_lr = o.lr;
  config.seed = 1;
  config.class_names = train->class_names();
  Trainer trainer(manager, loader, test_loader.get(), config);
  json epochs = json::array();
  trainer.on_epoch = [&](const EpochSummary& e) {
    json row{{"epoch", e.epoch + 1},
             {"seconds", e.seconds},
             {"images_per_second", e.images_per_second},
             {"train_loss", e.train_loss},
             {"train_accuracy", e.train_accuracy}};
    if (e.has_test) {
      row["test_loss"] = e.test.loss;
      row["test_accuracy"] = e.test.accuracy;
    }
    epochs.push_back(row);
    std::fprintf(stderr, "  epoch %lld: %.2f s, train accuracy %.3f%s\n", static_cast<long long>(e.epoch + 1),
                 e.seconds, e.train_accuracy, e.has_test ? fmt(", test accuracy %.3f", e.test.accuracy).c_str() : "");
  };
  trainer.run();

  std::vector<double> seconds;
  for (const json& e : epochs) seconds.push_back(e["seconds"].get<double>());
  const json& last = epochs.back();
  return json{{"replica_devices", o.replica_devices},
              {"replicas", devices.size()},
              {"model", o.model},
              {"spec", spec},
              {"data", train->source()},
              {"train_samples", train->size()},
              {"test_samples", test ? json(test->size()) : json(nullptr)},
              {"global_batch", o.batch},
              {"lr", o.lr},
              {"cpu_threads", cpu_threads(o)},
              {"blas_threads_per_replica", devices[0].is_cpu() ? json(threads) : json(nullptr)},
              {"epochs", epochs},
              {"epoch_seconds_mean", std::accumulate(seconds.begin(), seconds.end(), 0.0) / seconds.size()},
              {"test_accuracy", last.contains("test_accuracy") ? last["test_accuracy"] : json(nullptr)},
              {"peak_bytes", peak_memory(devices)}};
}

int child_main(const std::string& mode, const Options& o) {
  try {
    json result = mode == "_steps" ? measure_steps(o) : train_epochs(o);
    std::cout << result.dump() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cout << json{{"error", e.what()}}.dump() << std::endl;
    return 1;
  }
}

json run_json_command(const std::vector<std::string>& argv,
                      const std::vector<std::pair<std::string, std::string>>& env) {
  std::string cmd;
  if (!env.empty()) {
    cmd = "env";
    for (const auto& [k, v] : env) cmd += " " + k + "=" + quote(v);
    cmd += " ";
  }
  for (const std::string& a : argv) cmd += quote(a) + " ";
  std::fflush(stdout);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return json{{"error", "cannot start: " + cmd}};
  std::string output;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) output += buf;
  const int status = pclose(pipe);
  std::istringstream lines(output);
  std::string line, last;
  while (std::getline(lines, line))
    if (!line.empty()) last = line;
  json result;
  try {
    result = json::parse(last);
  } catch (const json::exception&) {
    result = nullptr;
  }
  const bool ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok && result.is_object()) return result;
  if (result.is_object() && result.contains("error")) return result;
  std::string why = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                        : "exit status " + std::to_string(WEXITSTATUS(status));
  return json{{"error", why + " from " + cmd + (output.empty() ? "" : ": " + output.substr(output.size() > 400 ? output.size() - 400 : 0))}};
}

json run_child(const std::string& mode, const std::vector<std::string>& flags) {
  std::vector<std::string> argv{std::filesystem::read_symlink("/proc/self/exe").string(), mode};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return run_json_command(argv);
}

bool failed(const json& result) { return result.is_object() && result.contains("error"); }

}  // namespace lockstep::bench
