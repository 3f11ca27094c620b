#pragma once
// The data `lockstep train` trains on: the training and test sets as the
// settings open them, and the loaders that feed the replicas and the
// evaluation.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "data/loader.h"
#include "data/open_dataset.h"
#include "run_plan.h"
#include "settings.h"
#include "training/checkpoint.h"

namespace lockstep::app {

// The training and test sets, each cut to --limit / --test-limit, and what
// keeping image folders' decoded images took or would take.
struct TrainData {
  data::DataSets sets;
  std::shared_ptr<const data::Dataset> train, test;
  int64_t cache_budget = 0, decoded_bytes = 0;
  bool decoded_kept = false;
  // --input as settled: the CxHxW an image folder's images are resized to,
  // which the start report compares with what --init's model was trained on.
  std::string input_size;
};

// --data a cache file (`data_path`, lockstep cache): --input, --test-fraction
// (unless a `separate_test_set` is given) and --max-image-pixels that were
// not `settled` (given, or taken from the checkpoint resumed) are the
// file's, noted in s.from_cache_file. A file that is no whole cache is left
// for open_data to refuse.
void adopt_cache_settings(TrainSettings& s, const GivenFlags& settled, const std::string& data_path,
                          bool separate_test_set);

// The sets the run's data files hold (`run`: its files, and the seed that
// holds out a single class folder's test samples), as --input, --augment,
// --limit and the other data flags say; a data flag given that the data
// cannot honour is refused.
TrainData open_data(const TrainSettings& s, const SettledRun& run);

// The normalisation --init's file (`init_path`) says its model was trained
// with (an export's metadata), or none: no --init, a file that says nothing,
// or one that cannot be read (the replicas' load names what is wrong with it).
std::optional<data::Normalization> init_normalization(const std::string& init_path);

// --normalize not given (nor saved in the checkpoint resumed): init when
// --init's file carries its model's normalisation (`from_init`), so the
// model keeps seeing the inputs it learned from; imagenet for other
// pretrained weights on RGB data, which is what they were trained with;
// else dataset. Returns the start report's line for a choice made so ("" when
// given or dataset). Throws naming the file when --normalize init has no
// file's values to take, or the file's do not fit the data's channels.
std::string resolve_normalize(TrainSettings& s, const RunFiles& files, const TrainData& d,
                              const std::optional<data::Normalization>& from_init);

// The training loader (augmentation, the checkpoint's normalisation when
// resuming) and the test loader, whose first batch is checked against the
// training set's shape and classes. For GPU replicas the training batches
// hold the decoded bytes, augmented on the GPUs (LoaderConfig::augment_on_device).
struct Loaders {
  std::unique_ptr<data::Loader> train, test;
};

// Whether --mixup or --cutmix mixes the training batches.
bool mixes_batches(const TrainSettings& s);
// Whether the training batches of GPU replicas (`on_gpus`) are augmented on
// the GPUs, where they cross as bytes, rather than by the loader's threads
// (never when mixing: the loader mixes the whole float batch).
bool augmented_on_gpus(const TrainSettings& s, bool on_gpus);

// `run`: the batch, the loader threads, the seed, the replicas' devices and
// the checkpoint resumed; `from_init`: init_normalization's, which --normalize
// init takes.
Loaders make_loaders(const TrainSettings& s, const SettledRun& run, const TrainData& d,
                     const std::optional<data::Normalization>& from_init);

}  // namespace lockstep::app
