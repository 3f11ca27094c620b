#pragma once
// The prefetching loader: a BatchSource over a Dataset. Worker threads fill
// pinned host batch buffers ahead of the trainer (`prefetch` batches beyond
// the two it may hold), each batch the next batch_size samples of the epoch's
// order. The order depends only on (seed, epoch) and each sample's crop and
// flip only on (seed, epoch, sample), so the batches are the same whatever
// the number of threads.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "data/augment.h"
#include "data/dataset.h"
#include "data/mix.h"
#include "runtime/batch_source.h"

namespace lockstep::data {

struct LoaderConfig {
  int64_t batch_size = 128;
  bool shuffle = true;     // off: samples in index order
  bool drop_last = false;  // drop the last partial batch of an epoch
  uint64_t seed = 0;
  int threads = 2;   // worker threads (at least 1)
  int prefetch = 2;  // batches prepared beyond the two the trainer may hold (at least 2)
  AugmentConfig augment;
  // Mixup and CutMix (data/mix.h): when enabled, each batch, whole, is
  // mixed after augmentation and normalisation, and its labels are mixed
  // targets [count, 3] (ops/loss.h). Needs the float batches (not
  // augment_on_device): the pairs span the whole batch, which no replica's
  // slice holds.
  MixConfig mix;
  // Batches hold each sample's decoded bytes and its draw (HostBatch's u8
  // images and draws) instead of augmented, normalised floats: the replica
  // that trains on them augments them on its device (ops::augment_images),
  // where a GPU's batches cross at a quarter of their size as floats. Off,
  // the loader threads augment with the same arithmetic (the CPU twin).
  bool augment_on_device = false;
  bool normalize = true;
  // Used when set; otherwise computed once from the data set at construction
  // (over at most normalization_samples samples unless it is held in memory).
  std::optional<Normalization> normalization;
  int64_t normalization_samples = 10000;
  // An image that fails to decode is left out of its batch (which comes out
  // smaller) and listed in skipped(), instead of ending the epoch with an error.
  bool skip_bad_images = false;
  // Starts one worker thread; empty: std::thread. Tests make it fail as a
  // process thread limit would (std::system_error).
  std::function<std::thread(std::function<void()>)> start_thread;
};

class Loader final : public BatchSource {
public:
  // Throws lockstep::Error when a worker thread cannot be started (those
  // already started are stopped and joined first).
  Loader(std::shared_ptr<const Dataset> dataset, LoaderConfig config);
  ~Loader() override;  // stops the epoch and joins the workers
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  Shape sample_shape() const override;
  int64_t num_classes() const override;
  int64_t size() const override;  // samples per epoch (fewer with drop_last)
  int64_t batches_per_epoch() const override;
  void start_epoch(int64_t epoch, int64_t first_batch) override;
  // Rethrows, naming the file, the first error a worker met in this epoch.
  bool next(HostBatch& batch) override;
  void stop() override;

  const Dataset& dataset() const { return *dataset_; }
  const std::vector<std::string>& class_names() const { return dataset_->class_names(); }
  const LoaderConfig& config() const { return config_; }
  // The statistics batches are normalised with (empty when normalize is off);
  // hand them to the evaluation loader and the checkpoint.
  const Normalization& normalization() const { return normalization_; }
  // The dataset indices of epoch `epoch`, in the order batches hold them.
  std::vector<int64_t> epoch_order(int64_t epoch) const;
  // Images left out while loading (skip_bad_images), over all epochs so far.
  BadFiles skipped() const;

private:
  struct State;
  void worker_main();
  void worker_loop();
  void stop_workers();

  std::shared_ptr<const Dataset> dataset_;
  LoaderConfig config_;
  Normalization normalization_;
  Tensor mean_, stddev_;  // f32 [C]: normalization_, or 0 and 1 when off (augment_on_device's batches)
  int64_t num_batches_ = 0;
  std::unique_ptr<State> state_;
};

// A loader for evaluation: the data set in index order, no augmentation, the
// last partial batch kept, normalised with the training loader's statistics
// (none when `normalization` is empty); with skip_bad_images, as the training
// loader, an image that fails to decode is left out and listed in skipped().
std::unique_ptr<Loader> make_eval_loader(std::shared_ptr<const Dataset> dataset, int64_t batch_size,
                                         const Normalization& normalization, int threads = 2,
                                         bool skip_bad_images = false);

}  // namespace lockstep::data
