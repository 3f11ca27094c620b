#include "setup.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "data/dataset.h"
#include "data/image_folder.h"
#include "runtime/shape.h"

namespace lockstep::app {

std::vector<Device> resolve_devices(const std::string& text, int replicas, bool quiet) {
  LS_CHECK(replicas >= 1, "--replicas must be at least 1, got ", replicas);
  // Each replica is a thread with a model of its own: checked before the
  // list of devices (2^31 of them) or any thread is made.
  LS_CHECK(replicas <= kMaxReplicas, "--replicas ", replicas, ": more than the ", kMaxReplicas,
           " replicas lockstep starts on one device (each a thread with its own model); give at most ", kMaxReplicas);
  if (text == "all" && cuda_device_count() == 0 && !quiet)
    std::fprintf(stderr, "notice: no GPU found, training on the CPU\n");
  const std::vector<Device> base = lockstep::resolve_devices(text);
  LS_CHECK(replicas == 1 || base.size() == 1, "--replicas ", replicas,
           " puts several replicas on one device; give a single device with it, not ", base.size());
  std::vector<Device> devices;
  for (const Device& d : base)
    for (int r = 0; r < replicas; ++r) devices.push_back(d);
  return devices;
}

void parse_input_shape(const std::string& text, int64_t& channels, int64_t& height, int64_t& width) {
  const std::optional<Shape> shape = parse_chw(text);
  LS_CHECK(shape && ((*shape)[0] == 1 || (*shape)[0] == 3), "--input ", text,
           ": expected CxHxW with C 1 or 3, e.g. 3x32x32");
  // A sample's pixels are allocated for every sample of a batch, and then
  // some per layer: past what an image may declare (PIL's limit, the default
  // --max-image-pixels) the allocation fails without saying which option.
  LS_CHECK((*shape)[1] <= data::kDefaultMaxImagePixels / (*shape)[2], "--input ", text, ": ", (*shape)[1], "x",
           (*shape)[2], " is more pixels than the ", data::kDefaultMaxImagePixels,
           " an image may have (as PIL's limit); choose a smaller size");
  channels = (*shape)[0];
  height = (*shape)[1];
  width = (*shape)[2];
}

std::shared_ptr<const data::Dataset> limit_dataset(std::shared_ptr<const data::Dataset> dataset, int64_t limit) {
  if (limit <= 0 || limit >= dataset->size()) return dataset;
  // Every k-th sample keeps the class balance of the whole set.
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < limit; ++i) indices.push_back(i * dataset->size() / limit);
  return std::make_shared<data::Subset>(dataset, indices, "every " + std::to_string(dataset->size() / limit) + "th sample");
}

int64_t available_memory_bytes() {
  int64_t bytes = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") {
      bytes = kib * 1024;
      break;
    }
  if (bytes <= 0) bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    bytes = std::min<int64_t>(bytes, static_cast<int64_t>(limit.rlim_cur));
  return std::max<int64_t>(bytes, 0);
}

void set_image_fit(data::DataOptions& options, const std::string& augment) {
  const bool keep_aspect = augment == "random-resized-crop";
  options.train_center_crop = keep_aspect ? 1.0 : 0.0;
  options.test_center_crop = keep_aspect ? 0.875 : 0.0;
}

data::DataOptions sample_options(const std::string& input, const std::string& augment, bool skip_bad_images,
                                 int64_t max_image_pixels, uint64_t seed) {
  data::DataOptions options;
  parse_input_shape(input, options.channels, options.height, options.width);
  options.skip_bad_images = skip_bad_images;
  options.max_image_pixels = max_image_pixels;
  options.split_seed = seed;
  set_image_fit(options, augment);
  return options;
}

std::string normalization_to_json(const data::Normalization& n) {
  return nlohmann::json{{"mean", n.mean}, {"std", n.std}}.dump();
}

data::Normalization normalization_from_json(const std::string& text) {
  data::Normalization n;
  try {
    auto j = nlohmann::json::parse(text);
    n.mean = j.at("mean").get<std::vector<float>>();
    n.std = j.at("std").get<std::vector<float>>();
  } catch (const std::exception& e) {
    LS_FAIL("damaged normalisation statistics in the checkpoint: ", e.what());
  }
  return n;
}

std::string checkpoint_setting(const std::map<std::string, std::string>& extra, const std::string& key) {
  const auto it = extra.find(key);
  return it == extra.end() ? std::string() : it->second;
}

data::Normalization checkpoint_normalization(const std::map<std::string, std::string>& extra) {
  const auto it = extra.find("normalization");
  return it == extra.end() ? data::Normalization{} : normalization_from_json(it->second);
}

std::string take_inference_weights(LoadedCheckpoint& checkpoint, const std::string& path, bool raw) {
  if (!has_ema(checkpoint)) return "";
  const std::string decay = checkpoint_setting(checkpoint.info.extra, "ema");
  if (raw) {
    checkpoint = without_ema(std::move(checkpoint));
    return "weights: raw (--no-ema), not the checkpoint's exponential moving average";
  }
  checkpoint = with_ema_weights(std::move(checkpoint), path);
  char text[96];
  std::snprintf(text, sizeof text, "weights: exponential moving average (decay %g)",
                decay.empty() ? 0.0 : std::strtod(decay.c_str(), nullptr));
  return decay.empty() ? "weights: exponential moving average" : text;
}

}  // namespace lockstep::app
