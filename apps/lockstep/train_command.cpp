// lockstep train: data, model, replicas and trainer wired together, run with
// Ctrl-C turned into "finish the step, write the checkpoint, exit"
// (stop_signals.h), and how the run ended told.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <filesystem>
#include <thread>

#include "commands.h"
#include "curve_drawer.h"
#include "data_check.h"
#include "stop_signals.h"
#include "time_limit_report.h"
#include "data/loader.h"
#include "base/error.h"
#include "base/printable.h"
#include "distributed/world.h"
#include "kernels/cpu/thread_pool.h"
#include "training/checkpoint_lock.h"
#include "training/pretrained.h"
#include "training/trainer.h"
#include "layers/models.h"
#include "runtime/memory_format_option.h"
#include "preflight.h"
#include "progress.h"
#include "setup.h"
#include "world_agreement.h"
#include "world_errors.h"

namespace lockstep::app {

namespace {

void validate(const TrainSettings& s) {
  // Named here, before any data is read (a model spec's own error would show its internals).
  const std::vector<std::string> models = model_names();
  if (std::find(models.begin(), models.end(), s.model) == models.end()) {
    std::string list;
    for (const std::string& m : models) list += (list.empty() ? "" : ", ") + m;
    LS_FAIL("--model '", printable(s.model, 60, ""), "': expected one of ", list);
  }
  LS_CHECK(s.epochs >= 1, "--epochs must be at least 1, got ", s.epochs);
  LS_CHECK(s.batch >= 1 || s.batch_per_device >= 1, "--batch must be at least 1, got ", s.batch);
  LS_CHECK(s.lr > 0.0f && std::isfinite(s.lr), "--lr must be a positive number, got ", s.lr);
  LS_CHECK(s.momentum >= 0.0f && s.momentum < 1.0f, "--momentum must lie in [0, 1), got ", s.momentum);
  LS_CHECK(s.weight_decay >= 0.0f, "--weight-decay must not be negative, got ", s.weight_decay);
  LS_CHECK(s.clip_grad_norm >= 0.0f && std::isfinite(s.clip_grad_norm),
           "--clip-grad-norm must be a non-negative number (0: off), got ", s.clip_grad_norm);
  LS_CHECK(s.warmup_epochs >= 0.0, "--warmup-epochs must not be negative, got ", s.warmup_epochs);
  LS_CHECK(s.threads >= 1, "--threads must be at least 1, got ", s.threads);
  LS_CHECK(s.augment == "none" || s.augment == "crop-flip" || s.augment == "random-resized-crop", "--augment ",
           s.augment, ": expected none, crop-flip or random-resized-crop");
  LS_CHECK(s.label_smoothing >= 0.0f && s.label_smoothing < 1.0f, "--label-smoothing ", s.label_smoothing,
           ": expected a number in [0, 1)");
  LS_CHECK(std::isfinite(s.backbone_lr_scale) && s.backbone_lr_scale >= 0.0f,
           "--backbone-lr-scale must be a number >= 0, got ", s.backbone_lr_scale);
  LS_CHECK(!s.freeze_backbone || s.backbone_lr_scale == 1.0f, "--freeze-backbone trains the classifier alone, "
           "--backbone-lr-scale ", s.backbone_lr_scale, " trains the layers before it too: give one of the two");
  LS_CHECK(s.normalize.empty() || s.normalize == "dataset" || s.normalize == "imagenet" || s.normalize == "none",
           "--normalize ", s.normalize, ": expected dataset, imagenet or none");
  LS_CHECK(s.max_image_pixels >= 1, "--max-image-pixels must be at least 1, got ", s.max_image_pixels);
  LS_CHECK(s.test_fraction >= 0.0 && s.test_fraction < 1.0, "--test-fraction must lie in [0, 1), got ",
           s.test_fraction);
}

// Settings that are each valid but together mean nothing, or would be
// ignored without a word.
void validate_combinations(const TrainSettings& s, const std::vector<Device>& devices) {
  LS_CHECK(!(s.given.contains("--batch") && s.given.contains("--batch-per-device")),
           "--batch (global) and --batch-per-device (per replica) say the same thing twice: give one of them");
  LS_CHECK(!s.scale_lr || s.given.contains("--batch-per-device"),
           "--scale-lr multiplies --lr by the replica count when the batch grows with it (--batch-per-device); "
           "with a global --batch it would change nothing: give --batch-per-device or leave --scale-lr out");
  LS_CHECK(!s.given.contains("--limit") || s.limit >= 1,
           "--limit 0 trains on no sample: give at least 1 (without --limit, every sample trains)");
  LS_CHECK(!s.given.contains("--test-limit") || s.test_limit >= 1,
           "--test-limit 0 tests on no sample: give at least 1 (without --test-limit, every test sample counts)");
  LS_CHECK(s.warmup_epochs <= static_cast<double>(s.epochs), "--warmup-epochs ", s.warmup_epochs,
           " lasts beyond the run of ", s.epochs, " epochs: the learning rate would never reach --lr");
  LS_CHECK(!s.nesterov || s.momentum > 0.0f, "--nesterov is a kind of momentum: it needs --momentum above 0");
  LS_CHECK(!s.cuda_graphs || devices[0].is_cuda(),
           "--cuda-graphs replays GPU steps from CUDA graphs; this run is on the CPU (--devices ", s.devices, ")");
  constexpr double kMaxBucketMb = 1 << 20;  // 1 TiB: far above any GPU's memory
  for (const auto& [value, flag] : {std::pair{s.bucket_mb, "--bucket-mb"}, {s.first_bucket_mb, "--first-bucket-mb"}})
    LS_CHECK(std::isfinite(value) && value > 0.0 && value <= kMaxBucketMb, flag,
             " must be a number of MiB above 0 "
             "and at most ",
             kMaxBucketMb, ", got ", value);
}

// A resumed run continues the checkpoint's run: a setting that would make it
// another run (another seed, batch, precision...) is refused unless --force,
// and said when forced. Mid-epoch, the batch and the samples cannot change
// at all: the position in the epoch would no longer mean anything.
void check_resume_changes(const TrainSettings& s, const CheckpointInfo& resume_info) {
  const std::vector<SettingChange> changes = meaning_changes(s, resume_info.extra);
  for (const SettingChange& c : changes) {
    const bool epoch_shape = c.flag == "--batch" || c.flag == "--limit" || c.flag == "--drop-last";
    LS_CHECK(!(epoch_shape && resume_info.batch_in_epoch > 0), "--resume ", s.resume, " stopped after batch ",
             resume_info.batch_in_epoch, " of an epoch; ", c.flag, " cannot change mid-epoch (the checkpoint's ",
             c.saved, ", given ", c.given, "): resume without it, or from a checkpoint written at an epoch's end");
    // A flag without a value reads as the setting it switches: "--drop-last
    // (drop_last 1)".
    const bool switch_flag = c.flag == "--no-dropout" || c.flag == "--drop-last" || c.flag == "--sync-bn";
    const std::string given = switch_flag ? c.flag + " (" + c.key + " " + c.given + ")" : c.flag + " " + c.given;
    LS_CHECK(s.force, "--resume ", s.resume, ": ", given, " differs from the checkpoint's ", c.saved,
             ", which would make the resumed run another run; leave it out to continue, or give --force to change it");
    std::printf("resume: %s replaces the checkpoint's %s (--force)\n", given.c_str(), c.saved.c_str());
  }
}

// LOCKSTEP_COLLECTIVE_TIMEOUT (seconds): how long a replica waits at a
// collective before it declares another replica or process lost.
std::chrono::milliseconds collective_timeout() {
  const char* v = std::getenv("LOCKSTEP_COLLECTIVE_TIMEOUT");
  if (!v || !*v) return default_collective_timeout;
  char* end = nullptr;
  double seconds = std::strtod(v, &end);
  LS_CHECK(*end == '\0' && seconds > 0 && seconds < 1e6, "LOCKSTEP_COLLECTIVE_TIMEOUT='", v,
           "': expected a positive number of seconds");
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// "on 3 processes x 2 replicas (6 in all) on 2 hosts over MPI (Open MPI v4.1.4)", or "on 2 replicas".
std::string world_text(const std::vector<Device>& devices, const ProcessGroup* world) {
  std::string local = std::to_string(devices.size()) + " replica" + (devices.size() == 1 ? "" : "s");
  if (!world) return "on " + local;
  return "on " + std::to_string(world->size()) + " processes x " + local + " (" +
         std::to_string(world->size() * devices.size()) + " in all) on " + std::to_string(world->hosts()) + " host" +
         (world->hosts() == 1 ? "" : "s") + " over " + world->transport();
}

int train(TrainSettings s, const std::shared_ptr<ProcessGroup>& world);

// A process after the first: trains in step with the others, prints nothing,
// writes nothing; a stop (Ctrl-C or SIGTERM to any process) ends all at one step.
int finish_quietly(Trainer& trainer) { return run_with_signals(trainer) ? 0 : 130; }

}  // namespace

int run_train(const TrainFlags& flags) {
  std::shared_ptr<ProcessGroup> world = join_world();
  return run_in_world(world, [&] { return train(flags.settings(), world); });
}

namespace {

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
  if (s.data.empty()) s.data = data::default_data_path();
  // Saved absolute: a later eval or --resume from another folder finds the
  // same data, not whatever lies at the relative path there.
  s.data = std::filesystem::absolute(s.data).lexically_normal().string();
  if (!s.test_data.empty()) s.test_data = std::filesystem::absolute(s.test_data).lexically_normal().string();
  if (s.batch_per_device > 0) {
    const int64_t replicas = static_cast<int64_t>(devices.size()) * processes;
    LS_CHECK(!__builtin_mul_overflow(s.batch_per_device, replicas, &s.batch), "--batch-per-device ",
             s.batch_per_device, " times ", replicas, " replicas overflows");
  }
  validate(s);
  validate_combinations(s, devices);
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

// A resumed run trains on its checkpoint's classes (unless --force); a
// change of the data since is told, and refused mid-epoch, whose remaining
// batches would be drawn from another order.
void check_resumed_data(const TrainSettings& s, const CheckpointInfo& info, const data::Dataset& train, bool first) {
  if (!s.force) check_same_classes(info.class_names, train.class_names(), s.data, s.resume);
  const std::vector<std::string> changes = data_changes(info.extra, "train", train);
  if (changes.empty()) return;
  std::string text;
  for (const std::string& c : changes) text += (text.empty() ? "" : "; ") + c;
  LS_CHECK(info.batch_in_epoch == 0, "--resume ", s.resume, " stopped after batch ", info.batch_in_epoch,
           " of an epoch, and the training data at ", s.data, " changed since (", text,
           "): the epoch goes on only on the same data; restore it, or resume from a checkpoint written at an "
           "epoch's end");
  if (first) std::printf("notice: the training data at %s changed since the checkpoint: %s\n", s.data.c_str(), text.c_str());
}

// The training and test sets, each cut to --limit / --test-limit, and what
// keeping image folders' decoded images took or would take.
struct TrainData {
  data::DataSets sets;
  std::shared_ptr<const data::Dataset> train, test;
  int64_t cache_budget = 0, decoded_bytes = 0;
  bool decoded_kept = false;
};

// --cache-mb in bytes: given, or a quarter of the memory available now.
int64_t cache_budget_bytes(const TrainSettings& s) {
  if (s.cache_mb >= 0.0) return static_cast<int64_t>(std::min(s.cache_mb, 1e12) * 1048576.0);
  return available_memory_bytes() / 4;
}

TrainData open_data(const TrainSettings& s) {
  data::DataOptions data_options;
  parse_input_shape(s.input, data_options.channels, data_options.height, data_options.width);
  data_options.skip_bad_images = s.skip_bad_images;
  data_options.max_image_pixels = s.max_image_pixels;
  data_options.split_seed = s.seed;
  set_image_fit(data_options, s.augment);
  LS_CHECK(s.test_data.empty() || !s.given.contains("--test-fraction"),
           "--test-fraction splits a single class folder; it does not go with --test-data ", s.test_data);
  // With a separate test set a single class folder is not split: all of it trains.
  data_options.test_fraction = s.test_data.empty() ? s.test_fraction : 0.0;
  TrainData d;
  d.cache_budget = data_options.cache_budget_bytes = cache_budget_bytes(s);
  d.sets = data::open_dataset(s.data, data_options);
  d.decoded_bytes = d.sets.decoded_bytes;
  d.decoded_kept = d.sets.decoded_kept;
  LS_CHECK(!s.given.contains("--input") || d.sets.format == data::DataFormat::image_folder, "--input ", s.input,
           " resizes the images of a folder; ", s.data, " holds ", data::format_name(d.sets.format), " data of ",
           d.sets.train->sample_shape().str(), " samples, which train at their own size: leave --input out");
  LS_CHECK(d.sets.split || !s.given.contains("--test-fraction"), "--test-fraction splits a single class folder, but ",
           s.data, d.sets.format == data::DataFormat::image_folder
                       ? std::string(" is already split into train and test folders")
                       : std::string(" has its own test files (") + data::format_name(d.sets.format) + ")");
  if (!s.test_data.empty()) {
    // The test folder in what the training images left of the budget (none when they did not fit).
    data_options.cache_budget_bytes = d.decoded_kept ? d.cache_budget - d.decoded_bytes : 0;
    data::DataSets separate = data::open_test_dataset(s.test_data, data_options, d.sets.train->class_names());
    d.decoded_bytes += separate.decoded_bytes;
    d.decoded_kept = d.decoded_kept && separate.decoded_kept;
    d.sets.test = separate.test;
    d.sets.skipped.merge(separate.skipped);
  }
  d.train = limit_dataset(d.sets.train, s.limit);
  d.test = d.sets.test ? limit_dataset(d.sets.test, s.test_limit) : nullptr;
  return d;
}

// --normalize not given (nor saved in the checkpoint resumed): imagenet for
// pretrained weights (--init) on RGB data, which is what they were trained
// with, else dataset. Returns whether imagenet was chosen so.
bool resolve_normalize(TrainSettings& s, const TrainData& d) {
  if (!s.normalize.empty()) return false;
  const bool imagenet = !s.init.empty() && d.train->sample_shape()[0] == 3;
  s.normalize = imagenet ? "imagenet" : "dataset";
  return imagenet;
}

// The training loader (augmentation, the checkpoint's normalisation when
// resuming) and the test loader, whose first batch is checked against the
// training set's shape and classes.
struct Loaders {
  std::unique_ptr<data::Loader> train, test;
};

Loaders make_loaders(const TrainSettings& s, const CheckpointInfo& resume_info, const TrainData& d) {
  data::LoaderConfig loader_config;
  loader_config.batch_size = s.batch;
  loader_config.seed = s.seed;
  loader_config.threads = s.threads;
  loader_config.drop_last = s.drop_last;
  loader_config.skip_bad_images = s.skip_bad_images;
  if (s.augment == "random-resized-crop") {
    loader_config.augment.random_resized_crop = true;
    loader_config.augment.horizontal_flip = true;
  } else if (s.augment == "crop-flip") {
    loader_config.augment.crop_padding = d.train->sample_shape()[1] >= 32 ? 4 : 2;
    loader_config.augment.horizontal_flip = true;
  }
  // Resumed, the checkpoint's values (unless --normalize changed the kind,
  // with --force); else --normalize's, the data set's computed by the loader.
  const auto saved_kind = resume_info.extra.find("normalize");
  const bool kind_changed = saved_kind != resume_info.extra.end() && saved_kind->second != s.normalize;
  const int64_t channels = d.train->sample_shape()[0];
  if (!s.resume.empty() && resume_info.extra.count("normalization") && !kind_changed) {
    loader_config.normalization = normalization_from_json(resume_info.extra.at("normalization"));
  } else if (s.normalize == "imagenet") {
    LS_CHECK(channels == 3, "--normalize imagenet: ImageNet's mean and std are per RGB channel, and ", s.data,
             " has samples of ", channels, " channel", channels == 1 ? "" : "s",
             "; give --normalize dataset or none (or --input 3xHxW for an image folder)");
    loader_config.normalization = data::imagenet_normalization();
  } else if (s.normalize == "none") {
    loader_config.normalization = data::no_normalization(channels);
  }
  Loaders loaders;
  loaders.train = std::make_unique<data::Loader>(d.train, loader_config);
  if (d.test) {
    loaders.test = data::make_eval_loader(d.test, std::max<int64_t>(s.batch, 256), loaders.train->normalization(),
                                          s.threads, s.skip_bad_images);
    check_test_set(*d.train, *d.test, *loaders.test, s.test_data);
  }
  return loaders;
}

// The model for this data; when resuming, the checkpoint's (a --model that
// names another one is refused).
std::string choose_model_spec(const TrainSettings& s, const CheckpointInfo& resume_info,
                              const data::Dataset& train_set) {
  ModelOptions model_options;
  model_options.dropout = s.dropout;
  const std::string spec = model_spec(s.model, train_set.sample_shape(), train_set.num_classes(), model_options);
  if (s.resume.empty()) return spec;
  LS_CHECK(!s.given.contains("--model") || resume_info.model_spec == spec,
           "--resume ", s.resume, " holds a checkpoint of '", resume_info.model_spec, "', not of '", spec, "'");
  return resume_info.model_spec;
}

ReplicaOptions replica_options(const TrainSettings& s, const std::shared_ptr<ProcessGroup>& world) {
  ReplicaOptions options;
  options.seed = s.seed;
  options.label_smoothing = s.label_smoothing;
  options.processes = world;
  options.collective_timeout = collective_timeout();
  options.context.sync_batch_norm = s.sync_bn;
  options.context.precision = s.precision;
  options.context.memory_format = s.memory_format;
  const auto bytes = [](double mib) { return static_cast<size_t>(mib * double(1 << 20)); };
  options.bucket_bytes = bytes(s.bucket_mb);
  options.first_bucket_bytes = bytes(s.first_bucket_mb);
  options.cuda_graphs = s.cuda_graphs;
  return options;
}

TrainerConfig trainer_config(const TrainSettings& s, const TrainData& d, const data::Normalization& normalization) {
  const data::Dataset& train_set = *d.train;
  TrainerConfig config;
  config.epochs = s.epochs;
  config.schedule.kind = s.schedule;
  config.schedule.base_lr = s.lr;
  config.schedule.warmup_epochs = s.warmup_epochs;
  config.schedule.step_epochs = std::max<double>(1.0, s.epochs / 3.0);
  config.sgd = {s.momentum, s.weight_decay, s.nesterov, s.clip_grad_norm};
  config.sgd.backbone_lr_scale = s.freeze_backbone ? 0.0f : s.backbone_lr_scale;
  config.seed = s.seed;
  config.checkpoint_path = s.checkpoint;
  config.class_names = train_set.class_names();
  config.checkpoint_extra = to_metadata(s);
  config.checkpoint_extra["normalization"] = normalization_to_json(normalization);
  // The test set as eval finds it again: whole, without --test-limit.
  config.checkpoint_extra["data_identity"] = data_identity_json(*d.train, d.sets.test.get());
  if (s.time_limit) config.time_limit_seconds = s.time_limit->seconds;
  return config;
}

// The lines before the first step: what trains on what, and where a resumed run goes on from.
void print_start(const TrainSettings& s, const std::string& spec, const TrainData& d,
                 const std::vector<Device>& devices, const ProcessGroup* world, const Trainer& trainer,
                 const CheckpointInfo& resume_info) {
  if (s.devices == "all" && devices[0].is_cpu()) std::fprintf(stderr, "notice: no GPU found, training on the CPU\n");
  std::printf("training %s on %s (%s, %lld training samples%s) %s [%s], batch %lld, lr %g, %lld epoch%s\n",
              spec.c_str(), s.data.c_str(), data::format_name(d.sets.format), static_cast<long long>(d.train->size()),
              d.test ? (", " + std::to_string(d.test->size()) + " test").c_str() : "",
              world_text(devices, world).c_str(), devices[0].str().c_str(), static_cast<long long>(s.batch), s.lr,
              static_cast<long long>(s.epochs), s.epochs == 1 ? "" : "s");
  if (!s.resume.empty())
    std::printf("resuming from %s at epoch %lld, batch %lld (step %lld)\n", s.resume.c_str(),
                static_cast<long long>(trainer.epoch() + 1), static_cast<long long>(resume_info.batch_in_epoch),
                static_cast<long long>(trainer.step()));
  std::fflush(stdout);
}

// Runs the trainer with the progress bar, the metrics file and the curve
// hooked to it, then reports how it ended: 0 when finished or stopped at the
// time limit, 130 when stopped by a signal.
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

  bool finished = run_with_signals(trainer);
  reporter.break_line();

  data::BadFiles loaded_skipped = loaders.train->skipped();
  if (loaders.test) loaded_skipped.merge(loaders.test->skipped());
  reporter.skipped(loaded_skipped, s.metrics);
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
  // or would overwrite what it must not; then keep other runs off the
  // checkpoint. Only the first process writes, so only it checks and locks.
  std::optional<CheckpointLock> checkpoint_lock;
  if (first) {
    check_outputs(s);
    checkpoint_lock.emplace(s.checkpoint);
  }

  const TrainData train_data = open_data(s);
  const bool imagenet_by_default = resolve_normalize(s, train_data);
  if (!s.resume.empty()) check_resumed_data(s, resume_info, *train_data.train, first);
  const std::string spec = choose_model_spec(s, resume_info, *train_data.train);
  // Before the loader's batch buffers and the replicas are allocated.
  if (devices[0].is_cpu())
    check_step_memory(s, spec, static_cast<int64_t>(devices.size()) * (world ? world->size() : 1),
                      static_cast<int64_t>(devices.size()));
  Loaders loaders = make_loaders(s, resume_info, train_data);
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
  const uint64_t seed = s.seed;
  // --init: the file is read once, checked, and copied into every replica.
  std::optional<PretrainedWeights> pretrained;
  if (!s.init.empty()) {
    check_torchvision_model(spec, "--init " + s.init);
    pretrained = read_pretrained(s.init);
  }
  std::mutex init_mutex;
  PretrainedLoad init_result;
  int64_t head_offset = 0;  // where the classifier's parameters start: the same in every replica
  ModelFactory factory = [&](Device d) -> std::unique_ptr<Model> {
    auto model = build_model_from_spec(spec, d, seed);
    model->freeze_backbone(s.freeze_backbone);
    {
      std::lock_guard<std::mutex> lock(init_mutex);
      head_offset = model->head_param_offset();
    }
    if (pretrained) {
      PretrainedLoad loaded = load_pretrained(*model, *pretrained, train_data.train->class_names());
      std::lock_guard<std::mutex> lock(init_mutex);
      init_result = loaded;
    }
    return model;
  };
  ReplicaManager replicas(factory, devices, replica_options(s, world));
  if (first && s.cuda_graphs && !replicas.graphs_in_use())
    std::fprintf(stderr, "notice: --cuda-graphs: steps run eagerly, %s\n",
                 replicas.replicas_share_a_device()
                     ? "since replicas sharing a GPU wait for it on the host in each gradient sum"
                     : "since a run across processes keeps its collectives eager for their watchdog");
  TrainerConfig config = trainer_config(s, train_data, loaders.train->normalization());
  if (config.sgd.backbone_lr_scale != 1.0f) config.sgd.backbone_elements = head_offset;
  Trainer trainer(replicas, *loaders.train, loaders.test.get(), config);
  if (!s.resume.empty()) trainer.resume(read_checkpoint(s.resume), s.resume);

  if (!first) return finish_quietly(trainer);
  print_start(s, spec, train_data, devices, world.get(), trainer, resume_info);
  for (const std::string& line : replaced) std::fprintf(stderr, "%s\n", line.c_str());
  if (train_data.decoded_bytes > 0) {
    const auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / 1048576.0; };
    if (train_data.decoded_kept)
      std::printf("decoded images kept in memory: %.1f MiB of a %.1f MiB budget (--cache-mb), each decoded once\n",
                  mib(train_data.decoded_bytes), mib(train_data.cache_budget));
    else
      std::printf("images decoded in every epoch (all or some): kept they would take %.1f MiB, more than the "
                  "%.1f MiB budget (--cache-mb)\n",
                  mib(train_data.decoded_bytes), mib(train_data.cache_budget));
  }
  if (imagenet_by_default)
    std::printf("normalised with ImageNet's mean and std, which pretrained weights expect (--normalize to change)\n");
  if (s.freeze_backbone)
    std::printf("backbone frozen: the classifier alone trains, the layers before it run as in inference\n");
  else if (s.backbone_lr_scale != 1.0f)
    std::printf("the layers before the classifier learn at %g x the learning rate\n", s.backbone_lr_scale);
  if (pretrained) {
    std::printf("initialised from %s: %lld tensors (%s names)\n", s.init.c_str(),
                static_cast<long long>(init_result.tensors),
                init_result.names == StateDictNames::timm ? "timm" : "torchvision");
    if (init_result.other_classes) {
      std::string names;
      for (const std::string& n : init_result.file_class_names) names += (names.empty() ? "" : ", ") + n;
      std::printf("the classifier %s was re-initialised: the file's %lld classes are others (%s)\n",
                  init_result.head.c_str(), static_cast<long long>(init_result.file_classes),
                  printable(names, 200, "").c_str());
    } else if (init_result.head_reinitialised) {
      std::printf("the classifier %s was re-initialised: %lld classes in the file, %lld here\n",
                  init_result.head.c_str(), static_cast<long long>(init_result.file_classes),
                  static_cast<long long>(train_data.train->num_classes()));
    }
    std::fflush(stdout);
  }
  return run_and_report(s, spec, train_data, loaders, trainer);
}

}  // namespace

}  // namespace lockstep::app
