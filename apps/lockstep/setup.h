#pragma once
// The pieces every command wires together: devices from --devices and
// --replicas, data sets from a path, the normalisation a checkpoint carries.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/augment.h"
#include "data/open_dataset.h"
#include "runtime/device.h"
#include "training/checkpoint.h"

namespace lockstep::app {

// The most replicas --replicas puts on one device (as many as the loader threads lockstep starts).
inline constexpr int kMaxReplicas = 1024;

// "all" (every GPU, or the CPU when there is none), "cpu", or GPU ordinals
// "0,1"; each repeated `replicas` times (1 to kMaxReplicas). Throws naming a
// GPU that is not there, or --replicas out of bounds.
std::vector<Device> resolve_devices(const std::string& text, int replicas, bool quiet = false);

// "3x32x32" -> channels, height, width; throws naming the text otherwise.
void parse_input_shape(const std::string& text, int64_t& channels, int64_t& height, int64_t& width);

// `limit` samples taken evenly over `data`, keeping its class balance (a quick run or a test).
std::shared_ptr<const data::Dataset> limit_dataset(std::shared_ptr<const data::Dataset> data, int64_t limit);

// The memory a new allocation may take now: /proc/meminfo's MemAvailable
// (physical memory when it cannot be read), within an address-space limit
// (ulimit -v) when one is set.
int64_t available_memory_bytes();

// How image folders fit the input size in a run trained with `augment` (the
// checkpoint's "augment"): after random-resized-crop their aspect ratio is
// kept, training from the whole centred window and testing on its middle
// 87.5% (torchvision's ImageNet recipe, Resize(256) then CenterCrop(224));
// otherwise each image is stretched. test_center_crop is predict's too.
void set_image_fit(data::DataOptions& options, const std::string& augment);

// The options that decide a run's samples, the same for `train` and for the
// cache `lockstep cache` writes for it (a cache of other options is
// refused): --input, --augment's fit, --skip-bad-images,
// --max-image-pixels, and --seed, which draws a folder's split.
data::DataOptions sample_options(const std::string& input, const std::string& augment, bool skip_bad_images,
                                 int64_t max_image_pixels, uint64_t seed);

std::string normalization_to_json(const data::Normalization& n);
data::Normalization normalization_from_json(const std::string& text);

// A checkpoint's setting `key` from its metadata (`extra`): "" when it has
// none, as one written before the setting was saved.
std::string checkpoint_setting(const std::map<std::string, std::string>& extra, const std::string& key);
// The normalisation a checkpoint saved; none (no mean, no std) when it saved none.
data::Normalization checkpoint_normalization(const std::map<std::string, std::string>& extra);

// The weights eval, predict and export read: the checkpoint's moving average
// of the weights and statistics (train --ema) in their place where it holds
// one, unless `raw` (--no-ema). Returns the line that says which ("" for a
// checkpoint without an average).
std::string take_inference_weights(LoadedCheckpoint& checkpoint, const std::string& path, bool raw);

}  // namespace lockstep::app
