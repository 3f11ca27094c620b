// lockstep eval: a checkpoint's loss, accuracy and per-class table on a data set.
// Under an MPI launcher the evaluation is global: each process's replicas
// compute the logits of their share of every batch (the training split),
// the processes sum them, and the first process alone prints and plots.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "confusion_plot.h"
#include "data_check.h"
#include "data/loader.h"
#include "data/loader_threads.h"
#include "training/checkpoint.h"
#include "distributed/world.h"
#include "base/error.h"
#include "training/output_lock.h"
#include "training/trainer.h"
#include "layers/models.h"
#include "preflight.h"
#include "progress.h"
#include "runtime/memory_format_option.h"
#include "runtime/precision.h"
#include "base/printable.h"
#include "setup.h"
#include "world_errors.h"

namespace lockstep::app {

namespace {

// True when both paths lead to the same file or folder (whatever links or relative paths say).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return !a.empty() && !b.empty() && std::filesystem::equivalent(a, b, ec) && !ec;
}

// Throws naming the data, the shapes and the remedy when the data's samples
// are not what the model takes.
void check_sample_shape(const Shape& data, const Shape& model, const std::string& data_path) {
  if (data == model) return;
  const bool channels_differ = data.rank() == 3 && model.rank() == 3 && data[0] != model[0];
  LS_FAIL("the data at ", data_path, " has samples of ", data.str(), ", and the checkpoint's model takes ",
          model.str(),
          channels_differ ? " (" + std::to_string(data[0]) + " channel" + (data[0] == 1 ? "" : "s") + " against " +
                                std::to_string(model[0]) + ")"
                          : std::string(),
          ": evaluate it on data of that shape (an image folder is resized and converted to the model's input "
          "by itself), or train a model on this data");
}

int eval(const EvalSettings& s, const std::shared_ptr<ProcessGroup>& world) {
  LoadedCheckpoint ck = read_checkpoint(s.checkpoint);
  const auto& extra = ck.info.extra;
  auto meta = [&](const char* key) { return checkpoint_setting(extra, key); };
  LS_CHECK(s.batch >= 1, "--batch must be at least 1, got ", s.batch);
  data::check_loader_threads(s.threads, "--threads");

  data::DataOptions options;
  options.max_image_pixels = s.max_image_pixels;
  parse_input_shape(extra.count("input") ? extra.at("input") : "3x32x32", options.channels, options.height,
                    options.width);
  options.skip_bad_images = s.skip_bad_images;
  set_image_fit(options, meta("augment"));
  // The training run's split, so that a folder split for training is
  // evaluated on its held-out part, not on images the model trained on.
  options.split_seed = ck.info.seed;
  if (!meta("test_fraction").empty()) {
    // The metadata is not under the checksum: an edited value is named, not met as std::stod's "stod".
    const std::string text = meta("test_fraction");
    char* end = nullptr;
    const double fraction = std::strtod(text.c_str(), &end);
    LS_CHECK(end != text.c_str() && *end == '\0' && fraction >= 0.0 && fraction < 1.0, "checkpoint ", s.checkpoint,
             ": its setting 'test_fraction' is \"", printable(text, 60, ""), "\", not a fraction in [0, 1)");
    options.test_fraction = fraction;
  }
  std::string data_path = s.data;
  data::DataSets sets;
  if (data_path.empty() && !meta("test_data").empty()) data_path = meta("test_data");
  const bool trained_folder = !s.data.empty() && meta("test_data").empty() && same_file(s.data, meta("data"));
  if (trained_folder) {
    // The folder the run split into training and test: its held-out part,
    // split as the run split it, never the images the model trained on.
    sets = data::open_dataset(data_path, options);
    if (sets.split && (!world || world->rank() == 0))
      std::fprintf(stderr,
                   "notice: --data %s is the folder the checkpoint trained on: evaluating its %lld held-out images "
                   "only (--test-fraction %g, --seed %llu), not the %lld it trained on\n",
                   data_path.c_str(), static_cast<long long>(sets.test ? sets.test->size() : 0),
                   options.test_fraction, static_cast<unsigned long long>(ck.info.seed),
                   static_cast<long long>(sets.train->size()));
  } else if (!data_path.empty()) {
    sets = data::open_test_dataset(data_path, options, ck.info.class_names);
  } else {
    data_path = !meta("data").empty() ? meta("data") : data::default_data_path();
    sets = data::open_dataset(data_path, options);
  }
  LS_CHECK(sets.test != nullptr, "no test set found at ", data_path, " (trained without one)");
  if (s.data.empty()) {
    // The checkpoint's own data: its classes must still be the ones trained
    // (a given --data is labelled by the checkpoint's class names instead).
    check_same_classes(ck.info.class_names, sets.test->class_names(), data_path, s.checkpoint);
    std::string changes;
    for (const std::string& c : data_changes(extra, "test", *sets.test)) changes += (changes.empty() ? "" : "; ") + c;
    if (!changes.empty() && (!world || world->rank() == 0))
      std::fprintf(stderr, "notice: the test data at %s changed since the checkpoint was trained: %s\n",
                   data_path.c_str(), changes.c_str());
  }
  // The confusion matrix may replace a PNG, never the checkpoint, the data, a
  // link or a file of another kind (unless --force): checked before the
  // evaluation, and locked until drawn (the first process draws it), so a
  // training run or another eval that names the file is refused meanwhile.
  std::unique_ptr<OutputLock> plot_lock;
  if (!s.plot.empty()) {
    check_picture_output(s.plot, "--plot", {{s.checkpoint, "--checkpoint"}, {data_path, "--data"}}, s.force);
    if (!world || world->rank() == 0) plot_lock = std::make_unique<OutputLock>(s.plot, "--plot");
  }
  const data::Normalization norm = checkpoint_normalization(extra);
  std::vector<Device> devices = resolve_devices(s.devices, 1, true);
  std::string spec = ck.info.model_spec;
  ModelFactory factory = [&](Device d) -> std::unique_ptr<Model> { return build_model_from_spec(spec, d, 0); };
  ReplicaOptions replica_options;
  replica_options.processes = world;
  // The precision it trained in, so that eval gives the figures the trainer
  // printed (a checkpoint from before the option trained in tf32, the default).
  const std::string precision = !s.precision.empty()          ? s.precision
                                : !meta("precision").empty() ? meta("precision")
                                                             : "tf32";
  replica_options.context.precision =
      parse_precision(precision, s.precision.empty() ? std::string("the checkpoint's precision") : "--precision");
  // In that precision, also the memory format it trained in (the
  // convolutions sum in other orders in the other format, on a GPU and on
  // oneDNN's CPU kernels). Otherwise the default for the precision and
  // device (default_memory_format).
  if (s.precision.empty() && !meta("memory_format").empty())
    replica_options.context.memory_format = parse_memory_format(meta("memory_format"), "the checkpoint's memory format");
  ReplicaManager replicas(factory, devices, replica_options);
  // Before the loader is made: its own check of the normalisation would name neither the data nor the model.
  LS_CHECK(sets.test->num_classes() == replicas.model(0).num_classes(), "the data at ", data_path, " has ",
           sets.test->num_classes(), " classes, the checkpoint's model ", replicas.model(0).num_classes());
  check_sample_shape(sets.test->sample_shape(), replicas.model(0).input_shape(), data_path);
  auto loader = data::make_eval_loader(sets.test, s.batch, norm, s.threads, s.skip_bad_images);
  const std::string weights = take_inference_weights(ck, s.checkpoint, s.no_ema);
  load_into(replicas.model(0), ck, s.checkpoint, /*with_optimizer_state=*/false);
  replicas.broadcast_from_first();

  Evaluation e = evaluate_model(replicas, *loader);
  if (world && world->rank() != 0) return 0;
  if (!weights.empty()) std::printf("%s\n", weights.c_str());
  std::printf("%s on %s in %s: loss %.4f accuracy %.2f%% (%lld samples)\n", spec.c_str(), data_path.c_str(),
              precision.c_str(), e.loss, 100.0 * e.accuracy, static_cast<long long>(e.count));
  ProgressReporter reporter(1, s.threads, "", false);
  data::BadFiles skipped = sets.skipped;
  skipped.merge(loader->skipped());
  reporter.skipped(skipped, "");
  reporter.per_class_table(e, ck.info.class_names);
  if (!s.plot.empty()) {
    char accuracy[32];
    std::snprintf(accuracy, sizeof accuracy, "%.2f%%", 100.0 * e.accuracy);
    const std::string problem = draw_confusion_matrix(
        s.plot, spec + " on " + data_path + ": accuracy " + accuracy, e.confusion, ck.info.class_names);
    LS_CHECK(problem.empty(), "--plot ", s.plot, ": ", problem);
    std::printf("confusion matrix: %s\n", s.plot.c_str());
  }
  return 0;
}

}  // namespace

int run_eval(const EvalSettings& s) {
  std::shared_ptr<ProcessGroup> world = join_world();
  return run_in_world(world, [&] { return eval(s, world); });
}

}  // namespace lockstep::app
