// lockstep train: data, model, replicas and trainer wired together, run with
// Ctrl-C turned into "finish the step, write the checkpoint, exit"
// (stop_signals.h), and how the run ended told.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "best_report.h"
#include "commands.h"
#include "curve_drawer.h"
#include "data/loader.h"
#include "distributed/world.h"
#include "kernels/cpu/thread_pool.h"
#include "preflight.h"
#include "progress.h"
#include "replica_models.h"
#include "resume_checks.h"
#include "run_locks.h"
#include "settled_run.h"
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
int run_and_report(const SettledRun& run, const std::string& spec, const TrainData& d, Loaders& loaders,
                   Trainer& trainer) {
  const RunFiles& files = run.files;
  ProgressReporter reporter(run.plan.epoch_count, run.plan.loader_threads, files.metrics_path, files.resuming());
  reporter.skipped(d.sets.skipped, files.metrics_path);
  Evaluation last_test;
  CurveDrawer curve(spec + " on " + files.data_path, files.curve_path, reporter);
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
  trainer.on_best = [&](const BestScore& best) { report_best(files, best, reporter); };

  const int64_t start_epoch = trainer.epoch();
  bool finished = run_with_signals(trainer);
  reporter.break_line();

  data::BadFiles loaded_skipped = loaders.train->skipped();
  if (loaders.test) loaded_skipped.merge(loaders.test->skipped());
  reporter.skipped(loaded_skipped, files.metrics_path);
  reporter.data_wait_summary();
  if (!finished && trainer.time_limit_reached())
    return finish_at_time_limit(files, run.plan, trainer, loaders.test.get(), *d.train, reporter, curve, last_test);
  if (!finished) {
    curve.draw();
    std::printf("stopped at epoch %lld, batch %lld (step %lld); checkpoint written to %s\n"
                "resume with: lockstep train --resume %s%s\n",
                static_cast<long long>(trainer.epoch() + 1), static_cast<long long>(trainer.checkpoint_info().batch_in_epoch),
                static_cast<long long>(trainer.step()), files.checkpoint_path.c_str(), files.checkpoint_path.c_str(),
                run.plan.resume_flags.c_str());
    return 130;
  }
  if (last_test.count > 0) reporter.per_class_table(last_test, d.train->class_names());
  if (trainer.early_stopped())
    report_early_stop(files, run.plan, trainer.best(), trainer.epoch(), trainer.epoch() == start_epoch, reporter);
  std::printf("checkpoint: %s\n", files.checkpoint_path.c_str());
  if (curve.drawn()) std::printf("training curve: %s\n", curve.png().c_str());
  return 0;
}

int train(TrainSettings s, const std::shared_ptr<ProcessGroup>& world) {
  // The first process alone prints progress and writes the metrics.
  const bool first = !world || world->rank() == 0;
  const SettledRun run = settle_run(s, world.get());
  const RunFiles& files = run.files;
  const std::vector<Device>& devices = run.replica_devices;
  const CheckpointInfo& resume_info = run.resume_info;
  share_cpu_cores(devices, world.get());
  // Find out now, not after the first epoch, that an output cannot be written
  // or would overwrite what it must not; then keep other runs off every
  // output. Only the first process writes, so only it checks and locks.
  std::vector<std::unique_ptr<OutputLock>> output_locks;
  if (first) {
    check_outputs(files);
    output_locks = lock_run_outputs(files);
  }

  const TrainData train_data = open_data(s, run);
  LS_CHECK(train_data.test || (!files.keeps_best() && run.plan.early_stop_patience == 0),
           files.keeps_best() ? "--keep-best" : "--early-stop", " compares the test accuracy of each epoch, and ",
           files.data_path,
           " has no test set: give --test-data, or data with a test part (a folder split in two, or a single class "
           "folder with --test-fraction above 0)");
  const std::optional<data::Normalization> from_init = init_normalization(files.init_path);
  const std::string normalize_note = resolve_normalize(s, files, train_data, from_init);
  if (files.resuming()) check_resumed_data(files, resume_info, *train_data.train, first);
  const std::string spec = choose_model_spec(s, files, resume_info, *train_data.train);
  // Before the loader's batch buffers and the replicas are allocated.
  if (devices[0].is_cpu())
    check_step_memory(run.plan.global_batch, spec, static_cast<int64_t>(devices.size()) * (world ? world->size() : 1),
                      static_cast<int64_t>(devices.size()));
  Loaders loaders = make_loaders(s, run, train_data, from_init);
  std::vector<std::string> replaced;
  if (first) replaced = check_replaced_outputs(files, spec);
  if (world) {
    world->set_timeout(collective_timeout());
    const std::string resume_position =
        !files.resuming() ? "" : "epoch " + std::to_string(resume_info.epoch + 1) + ", batch " +
                                     std::to_string(resume_info.batch_in_epoch) + " (step " +
                                     std::to_string(resume_info.step) + ")";
    check_processes_agree(*world, run_settings(s, spec, data::format_name(train_data.sets.format),
                                               *train_data.train, train_data.test.get(), resume_position));
  }
  ReplicaModels models(model_start(s, run), spec, train_data.train->class_names());
  ReplicaManager replicas(models.factory(), devices, replica_options(s, run.plan, world));
  if (first) notice_eager_steps(s, replicas);
  TrainerConfig config = trainer_config(s, run, train_data, loaders.train->normalization(), models.head_offset());
  Trainer trainer(replicas, *loaders.train, loaders.test.get(), config);
  if (files.resuming()) trainer.resume(read_checkpoint(files.resume_path), files.resume_path);

  if (!first) return finish_quietly(trainer);
  print_start(s, run, spec, train_data, world.get(), trainer);
  for (const std::string& line : replaced) std::fprintf(stderr, "%s\n", line.c_str());
  print_data_and_model_notes(s, run.plan, train_data, normalize_note);
  if (models.initialised())
    print_init(files, train_data, models.init_result(), loaders.train->normalization());
  if (devices[0].is_cuda())
    std::printf("%s\n", replicas.graphs_in_use() ? "steps replayed from a CUDA graph while the batch size stays "
                                                   "(--cuda-graphs off: every step eager)"
                                                 : "steps queued eagerly (--cuda-graphs)");
  return run_and_report(run, spec, train_data, loaders, trainer);
}

}  // namespace

int run_train(const TrainFlags& flags) {
  std::shared_ptr<ProcessGroup> world = join_world();
  return run_in_world(world, [&] { return train(flags.settings(), world); });
}

}  // namespace lockstep::app
