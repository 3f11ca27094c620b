// lockstep train: data, model, replicas and trainer wired together, with
// Ctrl-C turned into "finish the step, write the checkpoint, exit".
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "commands.h"
#include "data/loader.h"
#include "base/error.h"
#include "training/trainer.h"
#include "layers/models.h"
#include "progress.h"
#include "setup.h"

namespace lockstep::app {

namespace {

std::atomic<Trainer*> active_trainer{nullptr};
std::atomic<int> signal_count{0};  // lock-free, so safe in a signal handler

void on_signal(int) {
  // The first signal asks for a clean stop; a second one is left to the default action.
  if (signal_count.fetch_add(1) > 0) {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    return;
  }
  if (Trainer* t = active_trainer.load()) t->request_stop();
}

void validate(const TrainSettings& s) {
  LS_CHECK(s.epochs >= 1, "--epochs must be at least 1, got ", s.epochs);
  LS_CHECK(s.batch >= 1 || s.batch_per_device >= 1, "--batch must be at least 1, got ", s.batch);
  LS_CHECK(s.lr > 0.0f && std::isfinite(s.lr), "--lr must be a positive number, got ", s.lr);
  LS_CHECK(s.momentum >= 0.0f && s.momentum < 1.0f, "--momentum must lie in [0, 1), got ", s.momentum);
  LS_CHECK(s.weight_decay >= 0.0f, "--weight-decay must not be negative, got ", s.weight_decay);
  LS_CHECK(s.warmup_epochs >= 0.0, "--warmup-epochs must not be negative, got ", s.warmup_epochs);
  LS_CHECK(s.threads >= 1, "--threads must be at least 1, got ", s.threads);
  LS_CHECK(s.augment == "none" || s.augment == "crop-flip", "--augment ", s.augment, ": expected none or crop-flip");
  parse_schedule(s.schedule);
}

}  // namespace

int run_train(TrainSettings s, const std::vector<std::string>& given) {
  // Settings: the checkpoint's when resuming, then the machine's defaults.
  CheckpointInfo resume_info;
  std::vector<std::string> settled = given;
  if (!s.resume.empty()) {
    resume_info = read_checkpoint_info(s.resume);
    settled = from_metadata(s, resume_info.extra, given);
  }
  std::vector<Device> devices = resolve_devices(s.devices, s.replicas, /*quiet=*/true);
  apply_defaults(s, devices[0].is_cuda(), settled);
  if (devices[0].is_cpu() && devices.size() > 1) {
    // N CPU replicas each running OpenBLAS on every core oversubscribe the
    // cores, and OpenBLAS's waiting threads spin: share the cores out instead.
    int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    openblas_set_num_threads(std::max(1, cores / static_cast<int>(devices.size())));
  }
  if (s.data.empty()) s.data = data::default_data_path();
  if (s.batch_per_device > 0) s.batch = s.batch_per_device * static_cast<int64_t>(devices.size());
  validate(s);
  if (s.scale_lr && s.batch_per_device > 0) s.lr *= static_cast<float>(devices.size());

  // Data.
  data::DataOptions data_options;
  parse_input_shape(s.input, data_options.channels, data_options.height, data_options.width);
  data_options.skip_bad_images = s.skip_bad_images;
  data_options.split_seed = s.seed;
  data::DataSets sets = data::open_dataset(s.data, data_options);
  if (!s.test_data.empty()) sets.test = data::open_test_dataset(s.test_data, data_options, sets.train->class_names()).test;
  auto train_set = limit_dataset(sets.train, s.limit);
  auto test_set = sets.test ? limit_dataset(sets.test, s.test_limit) : nullptr;

  data::LoaderConfig loader_config;
  loader_config.batch_size = s.batch;
  loader_config.seed = s.seed;
  loader_config.threads = s.threads;
  loader_config.drop_last = s.drop_last;
  loader_config.skip_bad_images = s.skip_bad_images;
  if (s.augment == "crop-flip") {
    loader_config.augment.crop_padding = train_set->sample_shape()[1] >= 32 ? 4 : 2;
    loader_config.augment.horizontal_flip = true;
  }
  if (!s.resume.empty() && resume_info.extra.count("normalization"))
    loader_config.normalization = normalization_from_json(resume_info.extra.at("normalization"));
  data::Loader train_loader(train_set, loader_config);
  std::unique_ptr<data::Loader> test_loader;
  if (test_set) test_loader = data::make_eval_loader(test_set, std::max<int64_t>(s.batch, 256), train_loader.normalization(), s.threads);

  // Model and replicas.
  ModelOptions model_options;
  model_options.dropout = s.dropout;
  std::string spec = model_spec(s.model, train_set->sample_shape(), train_set->num_classes(), model_options);
  if (!s.resume.empty()) {
    LS_CHECK(std::find(given.begin(), given.end(), "--model") == given.end() || resume_info.model_spec == spec,
             "--resume ", s.resume, " holds a checkpoint of '", resume_info.model_spec, "', not of '", spec, "'");
    spec = resume_info.model_spec;
  }
  if (s.checkpoint.empty()) s.checkpoint = s.resume.empty() ? "lockstep.safetensors" : s.resume;
  {
    // Find out now, not after the first epoch, that the checkpoint cannot be written.
    std::filesystem::path parent = std::filesystem::absolute(s.checkpoint).parent_path();
    LS_CHECK(std::filesystem::is_directory(parent), "--checkpoint ", s.checkpoint, ": the folder ", parent.string(),
             " does not exist");
    LS_CHECK(!std::filesystem::is_directory(s.checkpoint), "--checkpoint ", s.checkpoint, " is a folder, not a file");
  }
  uint64_t seed = s.seed;
  ModelFactory factory = [&](Device d) -> std::unique_ptr<Model> { return build_model_from_spec(spec, d, seed); };
  ReplicaOptions replica_options;
  replica_options.seed = s.seed;
  replica_options.context.sync_batch_norm = s.sync_bn;
  ReplicaManager replicas(factory, devices, replica_options);

  TrainerConfig config;
  config.epochs = s.epochs;
  config.schedule.kind = parse_schedule(s.schedule);
  config.schedule.base_lr = s.lr;
  config.schedule.warmup_epochs = s.warmup_epochs;
  config.schedule.step_epochs = std::max<double>(1.0, s.epochs / 3.0);
  config.sgd = {s.momentum, s.weight_decay, s.nesterov};
  config.seed = s.seed;
  config.checkpoint_path = s.checkpoint;
  config.class_names = train_set->class_names();
  config.checkpoint_extra = to_metadata(s);
  config.checkpoint_extra["normalization"] = normalization_to_json(train_loader.normalization());
  Trainer trainer(replicas, train_loader, test_loader.get(), config);
  if (!s.resume.empty()) trainer.resume(read_checkpoint(s.resume), s.resume);

  if (s.devices == "all" && devices[0].is_cpu()) std::fprintf(stderr, "notice: no GPU found, training on the CPU\n");
  std::printf("training %s on %s (%s, %lld training samples%s) on %zu replica%s [%s], batch %lld, lr %g, %lld epoch%s\n",
              spec.c_str(), s.data.c_str(), data::format_name(sets.format), static_cast<long long>(train_set->size()),
              test_set ? (", " + std::to_string(test_set->size()) + " test").c_str() : "", devices.size(),
              devices.size() == 1 ? "" : "s", devices[0].str().c_str(), static_cast<long long>(s.batch), s.lr,
              static_cast<long long>(s.epochs), s.epochs == 1 ? "" : "s");
  if (!s.resume.empty())
    std::printf("resuming from %s at epoch %lld, batch %lld (step %lld)\n", s.resume.c_str(),
                static_cast<long long>(trainer.epoch() + 1), static_cast<long long>(resume_info.batch_in_epoch),
                static_cast<long long>(trainer.step()));
  std::fflush(stdout);

  ProgressReporter reporter(s.epochs, s.threads, s.metrics, !s.resume.empty());
  Evaluation last_test;
  trainer.on_progress = [&](const Progress& p) { reporter.step(p); };
  trainer.on_step = [&](int64_t step, double loss) { reporter.step_loss(step, loss); };
  trainer.on_epoch = [&](const EpochSummary& e) {
    reporter.epoch(e);
    if (e.has_test) last_test = e.test;
  };

  active_trainer.store(&trainer);
  auto old_int = std::signal(SIGINT, on_signal);
  auto old_term = std::signal(SIGTERM, on_signal);
  bool finished = false;
  try {
    finished = trainer.run();
  } catch (...) {
    active_trainer.store(nullptr);
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
    throw;
  }
  active_trainer.store(nullptr);
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  reporter.break_line();

  std::string skipped = train_loader.skipped().summary();
  if (!skipped.empty()) std::fprintf(stderr, "%s\n", skipped.c_str());
  if (!finished) {
    std::printf("stopped at epoch %lld, batch %lld (step %lld); checkpoint written to %s\n"
                "resume with: lockstep train --resume %s\n",
                static_cast<long long>(trainer.epoch() + 1), static_cast<long long>(trainer.checkpoint_info().batch_in_epoch),
                static_cast<long long>(trainer.step()), s.checkpoint.c_str(), s.checkpoint.c_str());
    return 130;
  }
  if (last_test.count > 0) reporter.per_class_table(last_test, train_set->class_names());
  std::printf("checkpoint: %s\n", s.checkpoint.c_str());
  return 0;
}

}  // namespace lockstep::app
