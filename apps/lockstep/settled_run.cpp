#include "settled_run.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "base/error.h"
#include "data/loader_threads.h"
#include "data/open_dataset.h"
#include "resume_checks.h"
#include "settings_checks.h"
#include "settings_metadata.h"
#include "settings_table.h"
#include "setup.h"
#include "train_data.h"
#include "train_options.h"

namespace lockstep::app {

namespace {

// --keep-best's file: NAME.best.safetensors for the checkpoint NAME.safetensors
// (or NAME.best.safetensors beside a checkpoint NAME of another extension).
std::string best_checkpoint_path(const std::string& checkpoint) {
  const std::string suffix = ".safetensors";
  const std::string& c = checkpoint;
  const bool named = c.size() > suffix.size() && c.compare(c.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (named ? c.substr(0, c.size() - suffix.size()) : c) + ".best" + suffix;
}

RunPlan run_plan(const TrainSettings& s, const std::vector<Device>& devices) {
  RunPlan plan;
  plan.epoch_count = s.epochs;
  plan.global_batch = s.batch;
  plan.base_lr = s.lr;
  plan.wall_time_limit = s.time_limit;
  plan.early_stop_patience = s.early_stop;
  plan.loader_threads = s.threads;
  plan.loader_threads_chosen = !s.given.contains("--threads");
  plan.seed = s.seed;
  plan.no_gpu_found = s.devices == "all" && devices[0].is_cpu();
  if (s.given.contains("--devices")) plan.resume_flags += " --devices " + s.devices;
  if (s.given.contains("--replicas")) plan.resume_flags += " --replicas " + std::to_string(s.replicas);
  return plan;
}

}  // namespace

RunFiles run_files(const TrainSettings& s) {
  RunFiles files;
  files.data_path = s.data;
  files.test_data_path = s.test_data;
  files.init_path = s.init;
  files.resume_path = s.resume;
  files.checkpoint_path = !s.checkpoint.empty() ? s.checkpoint : s.resume.empty() ? "lockstep.safetensors" : s.resume;
  if (s.keep_best) files.best_path = best_checkpoint_path(files.checkpoint_path);
  files.metrics_path = s.metrics;
  files.curve_path = !s.plot.empty() ? s.plot
                                     : std::filesystem::path(files.checkpoint_path).replace_extension(".png").string();
  files.curve_option = s.plot.empty() ? "the training curve (--plot)" : "--plot";
  files.forced = s.force;
  return files;
}

SettledRun settle_run(TrainSettings& s, const ProcessGroup* world) {
  LS_CHECK(s.init.empty() || s.resume.empty(), "--init starts a new run from pretrained weights; --resume ", s.resume,
           " continues from its checkpoint's: give one of the two");
  SettledRun run;
  const int processes = world ? world->size() : 1;
  GivenFlags settled = s.given;
  if (!s.resume.empty()) {
    run.resume_info = read_checkpoint_info(s.resume);
    settled = from_metadata(s, run.resume_info.extra);
  }
  run.replica_devices = resolve_devices(s.devices, s.replicas, /*quiet=*/true);
  const std::vector<Device>& devices = run.replica_devices;
  apply_defaults(s, devices[0], settled);
  if (!settled.contains("--threads")) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int gpu_replicas = devices[0].is_cuda() ? static_cast<int>(devices.size()) : 0;
    s.threads = data::default_loader_threads(cores, world ? world->processes_on_host() : 1, gpu_replicas);
  }
  if (s.data.empty()) s.data = data::default_data_path();
  // Saved absolute: a later eval or --resume from another folder finds the
  // same data, not whatever lies at the relative path there.
  s.data = std::filesystem::absolute(s.data).lexically_normal().string();
  if (!s.test_data.empty()) s.test_data = std::filesystem::absolute(s.test_data).lexically_normal().string();
  adopt_cache_settings(s, settled, s.data, !s.test_data.empty());
  if (s.batch_per_device > 0) {
    const int64_t replicas = static_cast<int64_t>(devices.size()) * processes;
    LS_CHECK(!__builtin_mul_overflow(s.batch_per_device, replicas, &s.batch), "--batch-per-device ",
             s.batch_per_device, " times ", replicas, " replicas overflows");
  }
  check_settings(s);
  check_cuda_graphs(s, devices, s.devices);
  run.files = run_files(s);
  if (!s.resume.empty()) check_resume_changes(meaning_changes(s, run.resume_info.extra), run.files, run.resume_info);
  if (s.scale_lr && s.batch_per_device > 0) s.lr *= static_cast<float>(devices.size() * processes);
  run.plan = run_plan(s, devices);
  return run;
}

}  // namespace lockstep::app
