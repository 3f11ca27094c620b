// lockstep train: data, model, replicas and trainer wired together, run with
// Ctrl-C turned into "finish the step, write the checkpoint, exit"
// (stop_signals.h), and how the run ended told.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "best_report.h"
#include "commands.h"
#include "curve_drawer.h"
#include "data/loader.h"
#include "data/loader_threads.h"
#include "distributed/world.h"
#include "kernels/cpu/thread_pool.h"
#include "preflight.h"
#include "settings_metadata.h"
#include "settings_table.h"
#include "progress.h"
#include "replica_models.h"
#include "run_locks.h"
#include "resume_checks.h"
#include "settings_checks.h"
#include "setup.h"
#include "start_report.h"
#include "stop_signals.h"
#include "time_limit_report.h"
#include "train_data.h"
#include "train_options.h"
#include "training/trainer.h"
#include "world_agreement.h"
#include "world_errors.h"

namespace lockstep::app {

namespace {

// A process after the first: trains in step with the others, prints nothing,
// writes nothing; a stop (Ctrl-C or SIGTERM to any process) ends all at one step.
int finish_quietly(Trainer& trainer) { return run_with_signals(trainer) ? 0 : 130; }

// The settings this run trains with: the checkpoint's when resuming (read
// into `resume_info`), the machine's defaults, then the derived ones (data
// path, global batch, scaled lr, checkpoint path), validated. Returns the
// replicas' devices.
std::vector<Device> settle_settings(TrainSettings& s, const ProcessGroup* world, CheckpointInfo& resume_info) {
  const int processes = world ? world->size() : 1;
  GivenFlags settled = s.given;
  if (!s.resume.empty()) {
    resume_info = read_checkpoint_info(s.resume);
    settled = from_metadata(s, resume_info.extra);
  }
  std::vector<Device> devices = resolve_devices(s.devices, s.replicas, /*quiet=*/true);
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
  adopt_cache_settings(s, settled);
  if (s.batch_per_device > 0) {
    const int64_t replicas = static_cast<int64_t>(devices.size()) * processes;
    LS_CHECK(!__builtin_mul_overflow(s.batch_per_device, replicas, &s.batch), "--batch-per-device ",
             s.batch_per_device, " times ", replicas, " replicas overflows");
  }
  check_settings(s, devices);
  if (!s.resume.empty()) check_resume_changes(s, resume_info);
  if (s.scale_lr && s.batch_per_device > 0) s.lr *= static_cast<float>(devices.size() * processes);
  if (s.checkpoint.empty()) s.checkpoint = s.resume.empty() ? "lockstep.safetensors" : s.resume;
  return devices;
}

// N CPU replicas (and the processes on one host) each running on every core
// would oversubscribe the cores: share them out. The pool runs one replica's
// loops at a time; the others run theirs on their own thread.
void share_cpu_cores(const std::vector<Device>& devices, const ProcessGroup* world) {
  if (!devices[0].is_cpu() || (devices.size() == 1 && !world)) return;
  const int cores = cpu::compute_threads();
  const int sharers = static_cast<int>(devices.size()) * (world ? world->processes_on_host() : 1);
  cpu::set_compute_threads(std::max(1, cores / sharers));
}

// Runs the trainer with the progress bar, the metrics file and the curve
// hooked to it, then reports how it ended: 0 when finished, stopped early
// (--early-stop) or stopped at the time limit, 130 when stopped by a signal.
int run_and_report(const TrainSettings& s, const std::string& spec, const TrainData& d, Loaders& loaders,
                   Trainer& trainer) {
  ProgressReporter reporter(s.epochs, s.threads, s.metrics, !s.resume.empty());
  reporter.skipped(d.sets.skipped, s.metrics);
  Evaluation last_test;
  CurveDrawer curve(spec + " on " + s.data, curve_path(s), reporter);
  trainer.on_progress = [&](const Progress& p) { reporter.step(p); };
  trainer.on_step_metrics = [&](int64_t step, const StepMetrics& m) {
    const double loss = m.loss_sum / std::max<int64_t>(m.count, 1);
    const double accuracy = static_cast<double>(m.correct) / std::max<int64_t>(m.count, 1);
    reporter.step_loss(step, loss, accuracy);
    curve.add_step(step, loss, accuracy);
  };
  trainer.on_epoch = [&](const EpochSummary& e) {
    reporter.epoch(e);
    if (e.has_test) last_test = e.test;
    curve.add_epoch(trainer.step(), e.has_test, e.test.loss, e.test.accuracy);
    curve.draw();
  };
  trainer.on_best = [&](const BestScore& best) { report_best(s, best, reporter); };

  const int64_t start_epoch = trainer.epoch();
  bool finished = run_with_signals(trainer);
  reporter.break_line();

  data::BadFiles loaded_skipped = loaders.train->skipped();
  if (loaders.test) loaded_skipped.merge(loaders.test->skipped());
  reporter.skipped(loaded_skipped, s.metrics);
  reporter.data_wait_summary();
  if (!finished && trainer.time_limit_reached())
    return finish_at_time_limit(s, trainer, loaders.test.get(), *d.train, reporter, curve, last_test);
  if (!finished) {
    curve.draw();
    std::printf("stopped at epoch %lld, batch %lld (step %lld); checkpoint written to %s\n"
                "resume with: lockstep train --resume %s\n",
                static_cast<long long>(trainer.epoch() + 1), static_cast<long long>(trainer.checkpoint_info().batch_in_epoch),
                static_cast<long long>(trainer.step()), s.checkpoint.c_str(), s.checkpoint.c_str());
    return 130;
  }
  if (last_test.count > 0) reporter.per_class_table(last_test, d.train->class_names());
  if (trainer.early_stopped())
    report_early_stop(s, trainer.best(), trainer.epoch(), trainer.epoch() == start_epoch, reporter);
  std::printf("checkpoint: %s\n", s.checkpoint.c_str());
  if (curve.drawn()) std::printf("training curve: %s\n", curve.png().c_str());
  return 0;
}

int train(TrainSettings s, const std::shared_ptr<ProcessGroup>& world) {
  // The first process alone prints progress and writes the metrics.
  const bool first = !world || world->rank() == 0;
  LS_CHECK(s.init.empty() || s.resume.empty(), "--init starts a new run from pretrained weights; --resume ", s.resume,
           " continues from its checkpoint's: give one of the two");
  CheckpointInfo resume_info;
  const std::vector<Device> devices = settle_settings(s, world.get(), resume_info);
  share_cpu_cores(devices, world.get());
  // Find out now, not after the first epoch, that an output cannot be written
  // or would overwrite what it must not; then keep other runs off every
  // output. Only the first process writes, so only it checks and locks.
  std::vector<std::unique_ptr<OutputLock>> output_locks;
  if (first) {
    check_outputs(s);
    output_locks = lock_run_outputs(s);
  }

  const TrainData train_data = open_data(s);
  LS_CHECK(train_data.test || (!s.keep_best && s.early_stop == 0), s.keep_best ? "--keep-best" : "--early-stop",
           " compares the test accuracy of each epoch, and ", s.data,
           " has no test set: give --test-data, or data with a test part (a folder split in two, or a single class "
           "folder with --test-fraction above 0)");
  const std::optional<data::Normalization> from_init = init_normalization(s);
  const std::string normalize_note = resolve_normalize(s, train_data, from_init);
  if (!s.resume.empty()) check_resumed_data(s, resume_info, *train_data.train, first);
  const std::string spec = choose_model_spec(s, resume_info, *train_data.train);
  // Before the loader's batch buffers and the replicas are allocated.
  if (devices[0].is_cpu())
    check_step_memory(s, spec, static_cast<int64_t>(devices.size()) * (world ? world->size() : 1),
                      static_cast<int64_t>(devices.size()));
  Loaders loaders = make_loaders(s, resume_info, train_data, devices[0].is_cuda(), from_init);
  std::vector<std::string> replaced;
  if (first) replaced = check_replaced_outputs(s, spec);
  if (world) {
    world->set_timeout(collective_timeout());
    const std::string resume_position =
        s.resume.empty() ? "" : "epoch " + std::to_string(resume_info.epoch + 1) + ", batch " +
                                    std::to_string(resume_info.batch_in_epoch) + " (step " +
                                    std::to_string(resume_info.step) + ")";
    check_processes_agree(*world, run_settings(s, spec, data::format_name(train_data.sets.format),
                                               *train_data.train, train_data.test.get(), resume_position));
  }
  ReplicaModels models(s, spec, train_data.train->class_names());
  ReplicaManager replicas(models.factory(), devices, replica_options(s, world));
  if (first && s.cuda_graphs == "on" && !replicas.graphs_in_use())
    std::fprintf(stderr, "notice: --cuda-graphs on: steps run eagerly, %s\n",
                 replicas.replicas_share_a_device()
                     ? "since replicas sharing a GPU wait for it on the host in each gradient sum"
                     : "since a run across processes keeps its collectives eager for their watchdog");
  TrainerConfig config = trainer_config(s, train_data, loaders.train->normalization(), models.head_offset());
  Trainer trainer(replicas, *loaders.train, loaders.test.get(), config);
  if (!s.resume.empty()) trainer.resume(read_checkpoint(s.resume), s.resume);

  if (!first) return finish_quietly(trainer);
  print_start(s, spec, train_data, devices, world.get(), trainer, resume_info);
  for (const std::string& line : replaced) std::fprintf(stderr, "%s\n", line.c_str());
  print_data_and_model_notes(s, train_data, normalize_note);
  if (models.initialised()) print_init(s, models.init_result(), train_data.train->num_classes(), loaders.train->normalization());
  if (devices[0].is_cuda())
    std::printf("%s\n", replicas.graphs_in_use() ? "steps replayed from a CUDA graph while the batch size stays "
                                                   "(--cuda-graphs off: every step eager)"
                                                 : "steps queued eagerly (--cuda-graphs)");
  return run_and_report(s, spec, train_data, loaders, trainer);
}

}  // namespace

int run_train(const TrainFlags& flags) {
  std::shared_ptr<ProcessGroup> world = join_world();
  return run_in_world(world, [&] { return train(flags.settings(), world); });
}

}  // namespace lockstep::app
