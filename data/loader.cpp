#include "data/loader.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cmath>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
#include <numeric>
#include <thread>

#include "data/random.h"
#include "kernels/cpu/augment_cpu.h"
#include "kernels/loss_math.h"
#include "runtime/allocator.h"
#include "base/error.h"

namespace lockstep::data {
namespace {
// Samples per work item: small enough that all threads share one batch,
// large enough that the lock is taken rarely.
constexpr int64_t kChunk = 32;
// Batches the caller may hold at once (BatchSource::next's contract).
constexpr size_t kHeld = 2;
}  // namespace

// One pinned batch buffer. Batch b lives in slot b % slots.size(); a worker
// may start on batch b only once the trainer has released batch b - slots.size().
// The trainer holds up to kHeld batches (the one it trains on and the next,
// whose copy to the devices runs during the step), so there are prefetch +
// kHeld slots.
struct Slot {
  Tensor images, labels;
  Tensor draws;  // augment_on_device: u8 [batch, sizeof(AugmentDraw)], each sample's draw
  Tensor targets;  // mixing: i32 [batch, kMixedTargetWidth], the mixed targets handed out as the labels
  std::vector<uint8_t> valid;  // per position; 0 when skip_bad_images left the sample out
  int64_t batch = -1;          // which batch of the epoch it holds
  int64_t count = 0;           // samples of that batch
  int64_t done = 0;            // samples filled so far
  int64_t kept = 0;            // samples once skip_bad_images' gaps are closed (set before ready)
  bool ready = false;
};

struct Loader::State {
  std::mutex mutex;
  std::condition_variable work_cv;   // workers wait for something to claim
  std::condition_variable ready_cv;  // the trainer waits for its batch
  std::condition_variable idle_cv;   // start_epoch and the destructor wait for workers to put down their items
  std::vector<std::thread> workers;
  std::vector<Slot> slots;
  std::vector<int64_t> order;
  int64_t epoch = -1;
  bool active = false;               // start_epoch was called
  std::atomic<bool> stopped{false};  // read without the lock inside a work item
  bool shutdown = false;
  int64_t claim_batch = 0, claim_start = 0;  // the next work item
  int64_t handed = 0;                        // batches handed to the trainer
  std::deque<int64_t> held;                  // the handed batches the trainer may still read, oldest first
  int busy = 0;                              // workers inside a work item
  std::exception_ptr error;
  std::exception_ptr fatal;  // a worker died (out of memory outside a sample): every later call fails
  BadFiles skipped;

  // Every batch before this one is released: its slot may be refilled.
  int64_t released() const { return held.empty() ? handed : held.front(); }

  int64_t batch_count(int64_t batch, int64_t batch_size, int64_t total) const {
    return std::min(batch_size, total - batch * batch_size);
  }
};

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderConfig config)
    : dataset_(std::move(dataset)), config_(std::move(config)), state_(std::make_unique<State>()) {
  LS_CHECK(dataset_ != nullptr, "Loader: no data set");
  const int64_t n = dataset_->size();
  const Shape shape = dataset_->sample_shape();
  LS_CHECK(n > 0, "Loader: ", dataset_->source(), " holds no samples");
  LS_CHECK(shape.rank() == 3, "Loader: ", dataset_->source(), " has samples of ", shape.str(), ", not [C, H, W]");
  LS_CHECK(config_.batch_size >= 1, "Loader: batch size ", config_.batch_size, " must be at least 1");
  LS_CHECK(config_.threads >= 1, "Loader: ", config_.threads, " threads; it needs at least 1");
  LS_CHECK(config_.prefetch >= 2, "Loader: prefetch ", config_.prefetch, " must be at least 2");
  LS_CHECK(config_.augment.crop_padding >= 0, "Loader: negative crop padding ", config_.augment.crop_padding);
  LS_CHECK(config_.augment.crop_padding == 0 || !config_.augment.random_resized_crop,
           "Loader: a padded crop and a random resized crop are two crops: give one");
  LS_CHECK(!config_.augment.trivial || !config_.augment.random_resized_crop,
           "Loader: TrivialAugment follows a padded crop, not a random resized crop");
  LS_CHECK(!config_.augment.trivial || shape[0] == 1 || shape[0] == 3, "Loader: TrivialAugment (torchvision's) "
           "takes images of 1 or 3 channels, and ", dataset_->source(), " has samples of ", shape.str());
  const MixConfig& mix = config_.mix;
  for (double alpha : {mix.mixup_alpha, mix.cutmix_alpha})
    LS_CHECK(alpha >= 0.0 && std::isfinite(alpha), "Loader: mixup/CutMix alpha ", alpha, " is not a number >= 0");
  for (double p : {mix.prob, mix.switch_prob})
    LS_CHECK(p >= 0.0 && p <= 1.0, "Loader: mixup probability ", p, " is outside [0, 1]");
  LS_CHECK(!mix.enabled() || !config_.augment_on_device,
           "Loader: mixup and CutMix mix the augmented float batch, so its samples cannot be augmented on the "
           "device (augment_on_device)");
  // Not (n + batch_size - 1) / batch_size: that overflows for a batch size near 2^63.
  num_batches_ = n / config_.batch_size + (!config_.drop_last && n % config_.batch_size != 0 ? 1 : 0);
  LS_CHECK(num_batches_ > 0, "Loader: ", dataset_->source(), " has ", n, " samples, not one full batch of ",
           config_.batch_size, " (drop_last is on)");
  if (config_.normalize) {
    normalization_ = config_.normalization
                         ? *config_.normalization
                         : compute_normalization(*dataset_, dataset_->in_memory() ? 0 : config_.normalization_samples,
                                                 config_.skip_bad_images);
    LS_CHECK(static_cast<int64_t>(normalization_.mean.size()) == shape[0] &&
                 static_cast<int64_t>(normalization_.std.size()) == shape[0],
             "Loader: normalisation has ", normalization_.mean.size(), " means and ", normalization_.std.size(),
             " stds for samples of ", shape.str());
    for (float s : normalization_.std) LS_CHECK(s > 0.0f, "Loader: normalisation std ", s, " must be positive");
  }

  const int64_t batch = std::min(config_.batch_size, n);
  auto allocator = pinned_host_allocator();
  const Normalization stats = config_.normalize ? normalization_ : no_normalization(shape[0]);
  mean_ = Tensor::empty_with(Shape{shape[0]}, allocator);
  stddev_ = Tensor::empty_with(Shape{shape[0]}, allocator);
  std::copy(stats.mean.begin(), stats.mean.end(), mean_.data());
  std::copy(stats.std.begin(), stats.std.end(), stddev_.data());
  state_->slots.resize(static_cast<size_t>(config_.prefetch) + kHeld);
  for (Slot& slot : state_->slots) {
    slot.images = Tensor::empty_with(Shape{batch, shape[0], shape[1], shape[2]}, allocator,
                                     config_.augment_on_device ? DType::u8 : DType::f32);
    slot.labels = Tensor::empty_with(Shape{batch}, allocator, DType::i32);
    if (config_.mix.enabled()) slot.targets = Tensor::empty_with(Shape{batch, kMixedTargetWidth}, allocator, DType::i32);
    if (config_.augment_on_device)
      slot.draws = Tensor::empty_with(Shape{batch, static_cast<int64_t>(sizeof(AugmentDraw))}, allocator, DType::u8);
    slot.valid.assign(static_cast<size_t>(batch), 1);
  }
  try {
    for (int w = 0; w < config_.threads; ++w) {
      std::function<void()> body = [this] { worker_main(); };
      state_->workers.push_back(config_.start_thread ? config_.start_thread(std::move(body)) : std::thread(std::move(body)));
    }
  } catch (const std::system_error& e) {
    const size_t started = state_->workers.size();
    stop_workers();
    LS_FAIL("Loader: cannot start worker thread ", started + 1, " of ", config_.threads, " (", e.what(),
            "); fewer loader threads may fit the process's thread limit");
  } catch (const std::bad_alloc&) {
    stop_workers();
    LS_FAIL("Loader: out of memory starting ", config_.threads, " worker threads");
  }
}

Loader::~Loader() { stop_workers(); }

void Loader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->shutdown = true;
    state_->stopped = true;
  }
  state_->work_cv.notify_all();
  state_->ready_cv.notify_all();
  for (std::thread& t : state_->workers)
    if (t.joinable()) t.join();
  state_->workers.clear();
}

Shape Loader::sample_shape() const { return dataset_->sample_shape(); }
int64_t Loader::num_classes() const { return dataset_->num_classes(); }
int64_t Loader::size() const {
  return config_.drop_last ? num_batches_ * config_.batch_size : dataset_->size();
}
int64_t Loader::batches_per_epoch() const { return num_batches_; }

std::vector<int64_t> Loader::epoch_order(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (config_.shuffle) {
    Rng rng(derive_seed(config_.seed, kOrderStream, static_cast<uint64_t>(epoch)));
    shuffle(order, rng);
  }
  order.resize(static_cast<size_t>(size()));
  return order;
}

BadFiles Loader::skipped() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->skipped;
}

void Loader::start_epoch(int64_t epoch, int64_t first_batch) {
  LS_CHECK(first_batch >= 0 && first_batch <= num_batches_, "Loader::start_epoch: batch ", first_batch,
           " of an epoch of ", num_batches_, " batches");
  std::vector<int64_t> order = epoch_order(epoch);
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.fatal) std::rethrow_exception(s.fatal);
  // Let the workers put down what they hold before their buffers are reused.
  s.stopped = true;
  s.idle_cv.wait(lock, [&] { return s.busy == 0; });
  s.order = std::move(order);
  s.epoch = epoch;
  // Resuming mid-epoch starts at first_batch: the order is that of the whole epoch.
  s.claim_batch = first_batch;
  s.claim_start = 0;
  s.handed = first_batch;
  s.held.clear();
  s.error = nullptr;
  for (Slot& slot : s.slots) {
    slot.batch = -1;
    slot.ready = false;
  }
  s.active = true;
  s.stopped = false;
  lock.unlock();
  s.work_cv.notify_all();
}

void Loader::stop() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopped = true;
  }
  state_->work_cv.notify_all();
  state_->ready_cv.notify_all();
}

namespace {
// Moves the samples skip_bad_images kept to the front of the slot, keeping
// their order; returns how many there are.
int64_t close_gaps(Slot& slot) {
  int64_t count = 0;
  for (int64_t p = 0; p < slot.count; ++p) {
    if (!slot.valid[p]) continue;
    if (count != p) {
      for (Tensor* t : {&slot.images, &slot.draws}) {
        if (!t->defined()) continue;
        const size_t row = t->bytes() / static_cast<size_t>(t->dim(0));
        char* base = static_cast<char*>(t->raw());
        std::memmove(base + static_cast<size_t>(count) * row, base + static_cast<size_t>(p) * row, row);
      }
      slot.labels.labels()[count] = slot.labels.labels()[p];
    }
    ++count;
  }
  return count;
}
}  // namespace

bool Loader::next(HostBatch& batch) {
  State& s = *state_;
  const int64_t slots = static_cast<int64_t>(s.slots.size());
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.fatal) std::rethrow_exception(s.fatal);
  LS_CHECK(s.active, "Loader::next: call start_epoch first");
  if (s.held.size() == kHeld) {
    s.held.pop_front();
    s.work_cv.notify_all();
  }
  for (;;) {
    if (s.error) {
      std::exception_ptr error = s.error;
      s.error = nullptr;
      s.stopped = true;
      s.work_cv.notify_all();
      std::rethrow_exception(error);
    }
    if (s.stopped || s.handed == num_batches_) return false;
    Slot& slot = s.slots[s.handed % slots];
    const int64_t wanted = s.handed;
    s.ready_cv.wait(lock, [&] { return s.stopped || s.error || (slot.batch == wanted && slot.ready); });
    if (s.stopped || s.error) continue;
    ++s.handed;
    const int64_t count = slot.kept;
    if (count == 0) {  // every image of the batch was bad: never held
      s.work_cv.notify_all();
      continue;
    }
    batch.images = slot.images.batch_slice(0, count);
    batch.labels = (config_.mix.enabled() ? slot.targets : slot.labels).batch_slice(0, count);
    batch.count = count;
    batch.draws = config_.augment_on_device ? slot.draws.batch_slice(0, count) : Tensor();
    batch.crop_padding = config_.augment_on_device ? config_.augment.crop_padding : 0;
    batch.trivial = config_.augment_on_device && config_.augment.trivial;
    batch.mean = config_.augment_on_device ? mean_ : Tensor();
    batch.stddev = config_.augment_on_device ? stddev_ : Tensor();
    s.held.push_back(wanted);
    return true;
  }
}

// A worker's thread function: whatever escapes worker_loop (memory running out
// outside a sample's read) ends this worker, not the process, and every later
// next() and start_epoch() throws it.
void Loader::worker_main() {
  try {
    worker_loop();
  } catch (...) {
    State& s = *state_;
    std::exception_ptr error;
    try {
      throw;
    } catch (const std::bad_alloc&) {
      error = std::make_exception_ptr(Error("Loader: a worker thread ran out of memory (reading " + dataset_->source() + ")"));
    } catch (const Error&) {
      error = std::current_exception();
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(Error("Loader: a worker thread failed reading " + dataset_->source() + ": " + e.what()));
    } catch (...) {
      error = std::make_exception_ptr(Error("Loader: a worker thread failed reading " + dataset_->source()));
    }
    std::lock_guard<std::mutex> lock(s.mutex);
    s.fatal = error;
    if (!s.error) s.error = error;
    s.stopped = true;
    s.ready_cv.notify_all();
    s.idle_cv.notify_all();
  }
}

void Loader::worker_loop() {
  State& s = *state_;
  const Shape shape = sample_shape();
  const int64_t per_sample = shape.numel();
  const int64_t slots = static_cast<int64_t>(s.slots.size());
  const int64_t total = size();
  std::vector<uint8_t> scratch(static_cast<size_t>(per_sample));
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    s.work_cv.wait(lock, [&] {
      return s.shutdown || (s.active && !s.stopped && !s.error && s.claim_batch < num_batches_ &&
                            s.claim_batch < s.released() + slots);
    });
    if (s.shutdown) return;
    // Claim the next chunk of samples; the first chunk of a batch claims its slot.
    const int64_t b = s.claim_batch, start = s.claim_start;
    const int64_t count = s.batch_count(b, config_.batch_size, total);
    Slot& slot = s.slots[b % slots];
    if (start == 0) {
      slot.batch = b;
      slot.count = count;
      slot.done = 0;
      slot.ready = false;
      std::fill(slot.valid.begin(), slot.valid.end(), uint8_t{1});
    }
    const int64_t end = std::min(count, start + kChunk);
    s.claim_start = end;
    if (end == count) {
      ++s.claim_batch;
      s.claim_start = 0;
    }
    const int64_t* order = s.order.data() + b * config_.batch_size;
    const int64_t epoch = s.epoch;
    ++s.busy;
    lock.unlock();

    std::exception_ptr error;
    BadFiles bad;
    int32_t* labels = slot.labels.labels();
    int64_t p = start;
    for (; p < end && !s.stopped.load(std::memory_order_relaxed); ++p) {
      const int64_t index = order[p];
      try {
        // No augmentation is the draw that crops nothing and mirrors nothing.
        const AugmentDraw draw = config_.augment.enabled()
                                     ? draw_augmentation(config_.augment, config_.seed, epoch, index, shape)
                                     : AugmentDraw{};
        if (config_.augment_on_device) {
          dataset_->read_pixels(index, slot.images.u8_data() + p * per_sample);
          std::memcpy(slot.draws.u8_data() + p * static_cast<int64_t>(sizeof(AugmentDraw)), &draw, sizeof draw);
        } else {
          dataset_->read_pixels(index, scratch.data());
          // Without normalisation no pass at all: its mean 0 and std 1 leave every value as it is.
          cpu::augment_sample(scratch.data(), slot.images.data() + p * per_sample, shape[0], shape[1], shape[2],
                              config_.augment.crop_padding, draw, config_.normalize ? mean_.data() : nullptr,
                              config_.normalize ? stddev_.data() : nullptr);
        }
        labels[p] = dataset_->label(index);
      } catch (const Error& e) {
        if (!config_.skip_bad_images) {
          error = std::current_exception();
          break;
        }
        slot.valid[p] = 0;
        bad.add(dataset_->sample_name(index), e.what());
      } catch (const std::bad_alloc&) {
        error = std::make_exception_ptr(Error("Loader: out of memory reading sample " + std::to_string(index) + " of " +
                                              dataset_->source()));
        break;
      } catch (const std::exception& e) {
        error = std::make_exception_ptr(Error("Loader: reading sample " + std::to_string(index) + " of " +
                                              dataset_->source() + " failed: " + e.what()));
        break;
      } catch (...) {
        error = std::current_exception();
        break;
      }
    }

    lock.lock();
    s.skipped.merge(bad);
    if (error && !s.error) s.error = error;
    // A chunk cut short by stop() or an error never completes its batch.
    if (!error && p == end) slot.done += end - start;
    if (slot.done == slot.count && !slot.ready) {
      // The worker that completes a batch closes its gaps and mixes it
      // (LoaderConfig::mix: the whole batch, so the pairs i, count-1-i are
      // those of one replica's batch) outside the lock and still busy: no one
      // else touches a slot that is not ready, and start_epoch waits for it.
      lock.unlock();
      std::exception_ptr finish_error;
      try {
        slot.kept = close_gaps(slot);
        if (config_.mix.enabled() && slot.kept > 0) {
          const MixDraw draw = draw_mix(config_.mix, config_.seed, epoch, b, shape[1], shape[2]);
          mix_batch(slot.images.data(), slot.labels.labels(), slot.kept, shape, draw, slot.targets.labels());
        }
      } catch (...) {
        finish_error = std::current_exception();
      }
      lock.lock();
      if (finish_error && !s.error) s.error = finish_error;
      slot.ready = !finish_error;
    }
    --s.busy;
    if (slot.ready || s.error) s.ready_cv.notify_all();
    if (s.busy == 0) s.idle_cv.notify_all();
  }
}

std::unique_ptr<Loader> make_eval_loader(std::shared_ptr<const Dataset> dataset, int64_t batch_size,
                                         const Normalization& normalization, int threads, bool skip_bad_images) {
  LoaderConfig config;
  config.skip_bad_images = skip_bad_images;
  config.batch_size = batch_size;
  config.shuffle = false;
  config.drop_last = false;
  config.threads = threads;
  config.skip_bad_images = skip_bad_images;
  config.normalize = !normalization.mean.empty();
  if (config.normalize) config.normalization = normalization;
  return std::make_unique<Loader>(std::move(dataset), std::move(config));
}

}  // namespace lockstep::data
