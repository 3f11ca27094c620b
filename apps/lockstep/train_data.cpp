#include "train_data.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <sstream>
#include <string>

#include "base/error.h"
#include "data/cache_reader.h"
#include "preflight.h"
#include "setup.h"
#include "training/pretrained.h"

namespace lockstep::app {

namespace {

// --cache-mb in bytes: given, or a quarter of the memory available now.
int64_t cache_budget_bytes(const TrainSettings& s) {
  if (s.cache_mb >= 0.0) return static_cast<int64_t>(std::min(s.cache_mb, 1e12) * 1048576.0);
  return available_memory_bytes() / 4;
}

}  // namespace

void adopt_cache_settings(TrainSettings& s, const GivenFlags& settled, const std::string& data_path,
                          bool separate_test_set) {
  if (!data::is_cache_file(data_path)) return;
  data::CacheMadeWith made;
  try {
    made = data::read_cache_options(data_path);
  } catch (const std::exception&) {
    return;  // open_data refuses it, naming what is wrong
  }
  std::string taken;
  if (!settled.contains("--input")) {
    s.input = std::to_string(made.channels) + "x" + std::to_string(made.height) + "x" + std::to_string(made.width);
    taken += " --input " + s.input;
  }
  if (made.split && !settled.contains("--test-fraction") && !separate_test_set) {
    s.test_fraction = made.test_fraction;
    std::ostringstream fraction;
    fraction << s.test_fraction;
    taken += " --test-fraction " + fraction.str();
  }
  if (!settled.contains("--max-image-pixels") && s.max_image_pixels != made.max_image_pixels) {
    s.max_image_pixels = made.max_image_pixels;
    taken += " --max-image-pixels " + std::to_string(s.max_image_pixels);
  }
  if (!taken.empty()) s.from_cache_file = taken.substr(1);
}

TrainData open_data(const TrainSettings& s, const SettledRun& run) {
  const RunFiles& files = run.files;
  data::DataOptions data_options =
      sample_options(s.input, s.augment, s.skip_bad_images, s.max_image_pixels, run.plan.seed);
  const std::string& test_path = files.test_data_path;
  LS_CHECK(test_path.empty() || !s.given.contains("--test-fraction"),
           "--test-fraction splits a single class folder; it does not go with --test-data ", test_path);
  // With a separate test set a single class folder is not split: all of it trains.
  data_options.test_fraction = test_path.empty() ? s.test_fraction : 0.0;
  TrainData d;
  d.cache_budget = data_options.cache_budget_bytes = cache_budget_bytes(s);
  d.sets = data::open_dataset(files.data_path, data_options);
  d.decoded_bytes = d.sets.decoded_bytes;
  d.decoded_kept = d.sets.decoded_kept;
  LS_CHECK(!s.given.contains("--input") || d.sets.format == data::DataFormat::image_folder, "--input ", s.input,
           " resizes the images of a folder; ", files.data_path, " holds ", data::format_name(d.sets.format),
           " data of ", d.sets.train->sample_shape().str(), " samples, which train at their own size: leave --input out");
  LS_CHECK(d.sets.split || !s.given.contains("--test-fraction"), "--test-fraction splits a single class folder, but ",
           files.data_path, d.sets.format == data::DataFormat::image_folder
                       ? std::string(" is already split into train and test folders")
                       : std::string(" has its own test files (") + data::format_name(d.sets.format) + ")");
  if (!test_path.empty()) {
    // The test folder in what the training images left of the budget (none when they did not fit).
    data_options.cache_budget_bytes = d.decoded_kept ? d.cache_budget - d.decoded_bytes : 0;
    data::DataSets separate = data::open_test_dataset(test_path, data_options, d.sets.train->class_names());
    d.decoded_bytes += separate.decoded_bytes;
    d.decoded_kept = d.decoded_kept && separate.decoded_kept;
    d.sets.test = separate.test;
    d.sets.skipped.merge(separate.skipped);
  }
  d.input_size = s.input;
  d.train = limit_dataset(d.sets.train, s.limit);
  d.test = d.sets.test ? limit_dataset(d.sets.test, s.test_limit) : nullptr;
  return d;
}

std::optional<data::Normalization> init_normalization(const std::string& init_path) {
  if (init_path.empty()) return std::nullopt;
  std::optional<InputPreprocessing> input;
  try {
    input = pretrained_input(read_pretrained(init_path));
  } catch (const Error&) {
    return std::nullopt;  // refused, with the reason, when the replicas load it
  }
  if (!input) return std::nullopt;
  return data::Normalization{input->mean, input->std};
}

namespace {

// The file's values against the data: one mean and std per channel, finite,
// each std above 0 (none at all: the pixels as they are).
void check_init_normalization(const data::Normalization& n, int64_t channels, const RunFiles& files) {
  if (n.mean.empty() && n.std.empty()) return;
  bool usable = n.mean.size() == static_cast<size_t>(channels) && n.std.size() == n.mean.size();
  for (size_t c = 0; usable && c < n.mean.size(); ++c)
    usable = std::isfinite(n.mean[c]) && std::isfinite(n.std[c]) && n.std[c] > 0.0f;
  LS_CHECK(usable, "--init ", files.init_path, ": its metadata's input_mean and input_std (", n.mean.size(), " and ",
           n.std.size(), " values) are no normalisation of the ", channels, "-channel samples of ", files.data_path,
           " (one finite mean and one std above 0 per channel); give --normalize dataset, imagenet or none");
}

}  // namespace

std::string resolve_normalize(TrainSettings& s, const RunFiles& files, const TrainData& d,
                              const std::optional<data::Normalization>& from_init) {
  const int64_t channels = d.train->sample_shape()[0];
  if (s.normalize == "init" && !files.resuming()) {
    LS_CHECK(!files.init_path.empty(), "--normalize init takes the mean and std from --init's file: give --init");
    LS_CHECK(from_init.has_value(), "--normalize init: --init ", files.init_path,
             " says nothing of its model's normalisation (only a lockstep export carries it); give --normalize "
             "dataset, imagenet or none");
  }
  if (!s.normalize.empty()) {
    if (s.normalize == "init" && from_init) check_init_normalization(*from_init, channels, files);
    return "";
  }
  if (from_init) {
    check_init_normalization(*from_init, channels, files);
    s.normalize = "init";
    return "normalised as --init's file says its model was trained (" + files.init_path + "; --normalize to change)";
  }
  const bool imagenet = !files.init_path.empty() && channels == 3;
  s.normalize = imagenet ? "imagenet" : "dataset";
  return imagenet ? "normalised with ImageNet's mean and std, which pretrained weights expect (--normalize to change)"
                  : "";
}

bool mixes_batches(const TrainSettings& s) { return s.mixup > 0.0 || s.cutmix > 0.0; }

// Mixing pairs sample i with sample B-1-i of the whole batch, which no GPU
// replica's slice holds: the loader mixes the float batch, so it augments too.
bool augmented_on_gpus(const TrainSettings& s, bool on_gpus) {
  return on_gpus && s.augment_on == "gpu" && !mixes_batches(s);
}

Loaders make_loaders(const TrainSettings& s, const SettledRun& run, const TrainData& d,
                     const std::optional<data::Normalization>& from_init) {
  const CheckpointInfo& resume_info = run.resume_info;
  data::LoaderConfig loader_config;
  loader_config.augment_on_device = augmented_on_gpus(s, run.replica_devices[0].is_cuda());
  loader_config.batch_size = run.plan.global_batch;
  loader_config.seed = run.plan.seed;
  loader_config.threads = run.plan.loader_threads;
  loader_config.drop_last = s.drop_last;
  loader_config.skip_bad_images = s.skip_bad_images;
  loader_config.mix.mixup_alpha = s.mixup;
  loader_config.mix.cutmix_alpha = s.cutmix;
  loader_config.mix.prob = s.mixup_prob;
  loader_config.mix.switch_prob = s.mixup_switch_prob;
  if (s.augment == "random-resized-crop") {
    loader_config.augment.random_resized_crop = true;
    loader_config.augment.horizontal_flip = true;
  } else if (s.augment == "crop-flip" || s.augment == "trivial") {
    loader_config.augment.crop_padding = d.train->sample_shape()[1] >= 32 ? 4 : 2;
    loader_config.augment.horizontal_flip = true;
    loader_config.augment.trivial = s.augment == "trivial";
  }
  // Resumed, the checkpoint's values (unless --normalize changed the kind,
  // with --force); else --normalize's, the data set's computed by the loader.
  const auto saved_kind = resume_info.extra.find("normalize");
  const bool kind_changed = saved_kind != resume_info.extra.end() && saved_kind->second != s.normalize;
  const int64_t channels = d.train->sample_shape()[0];
  if (run.files.resuming() && resume_info.extra.count("normalization") && !kind_changed) {
    loader_config.normalization = normalization_from_json(resume_info.extra.at("normalization"));
  } else if (s.normalize == "imagenet") {
    LS_CHECK(channels == 3, "--normalize imagenet: ImageNet's mean and std are per RGB channel, and ",
             run.files.data_path, " has samples of ", channels, " channel", channels == 1 ? "" : "s",
             "; give --normalize dataset or none (or --input 3xHxW for an image folder)");
    loader_config.normalization = data::imagenet_normalization();
  } else if (s.normalize == "none") {
    loader_config.normalization = data::no_normalization(channels);
  } else if (s.normalize == "init") {
    // A resumed run that changes to init (--force) has no --init to take it from.
    LS_CHECK(from_init.has_value(), "--normalize init takes the mean and std from --init's file, and this run has "
             "none: give --normalize dataset, imagenet or none");
    loader_config.normalization =
        from_init->mean.empty() ? data::no_normalization(channels) : *from_init;
  }
  Loaders loaders;
  loaders.train = std::make_unique<data::Loader>(d.train, loader_config);
  if (d.test) {
    loaders.test = data::make_eval_loader(d.test, std::max<int64_t>(run.plan.global_batch, 256),
                                          loaders.train->normalization(), run.plan.loader_threads, s.skip_bad_images);
    check_test_set(*d.train, *d.test, *loaders.test, run.files.test_data_path);
  }
  return loaders;
}

}  // namespace lockstep::app
