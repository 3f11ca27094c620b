#pragma once
// Trainer: the training loop over a BatchSource with a ReplicaManager: the
// learning-rate schedule, metrics, evaluation, checkpoints every epoch, stop
// on request (from any thread) with a checkpoint to resume from, and a clear
// error when the loss stops being finite. It prints nothing: progress reaches
// the caller through callbacks.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "runtime/batch_source.h"
#include "training/best_score.h"
#include "training/checkpoint.h"
#include "training/lr_schedule.h"
#include "distributed/replica_manager.h"

namespace lockstep {

struct TrainerConfig {
  int64_t epochs = 1;
  LrSchedule schedule;
  SgdConfig sgd;
  uint64_t seed = 0;
  std::string checkpoint_path;             // empty: no checkpoints
  std::vector<std::string> class_names;
  std::map<std::string, std::string> checkpoint_extra;  // settings saved with each checkpoint
  int64_t progress_every = 10;             // steps between progress callbacks
  // Wall seconds from the start of run() after which training stops at the
  // next step boundary, as a stop request would (0: no limit).
  double time_limit_seconds = 0.0;
  // Needs a test set. The checkpoint of the epoch with the best test
  // accuracy so far is written here as well (empty: not kept).
  std::string best_path;
  // Stop after this many epochs whose test accuracy does not beat the best
  // (0: never).
  int64_t early_stop = 0;
};

struct Progress {
  int64_t epoch = 0, batch = 0, batches_per_epoch = 0, step = 0;
  float lr = 0.0f;
  double loss = 0.0, accuracy = 0.0;       // over the epoch so far
  double images_per_second = 0.0;
  double eta_seconds = 0.0;                // to the end of the epoch
  double data_wait_fraction = 0.0;         // share of the epoch's time spent waiting for batches
  double step_loss = 0.0;                  // mean loss of the last step
};

// Loss, accuracy and per-class accuracy on a data set.
struct Evaluation {
  double loss = 0.0, accuracy = 0.0;
  int64_t count = 0;
  std::vector<int64_t> class_total, class_correct;
  std::vector<int64_t> confusion;  // [true class][predicted class], row-major
};

struct EpochSummary {
  int64_t epoch = 0;
  double train_loss = 0.0, train_accuracy = 0.0;
  bool has_test = false;
  Evaluation test;
  double images_per_second = 0.0, seconds = 0.0;
  // Of `seconds`: the time the step loop waited for the loader's batches.
  double data_wait_seconds = 0.0;
  PhaseTimes phases;
};

// Loss, accuracy and per-class accuracy of the replicas' model (inference
// mode) over one pass of `data`.
Evaluation evaluate_model(ReplicaManager& replicas, BatchSource& data);

class Trainer {
public:
  Trainer(ReplicaManager& replicas, BatchSource& train, BatchSource* test, TrainerConfig config);

  std::function<void(const Progress&)> on_progress;
  std::function<void(const EpochSummary&)> on_epoch;
  std::function<void(const std::string&)> on_checkpoint;  // path, after each save
  // Called with each step's mean loss (for tests and metrics files).
  std::function<void(int64_t step, double loss)> on_step;
  // Called with each step's sums (loss, correct, count) over every replica.
  std::function<void(int64_t step, const StepMetrics&)> on_step_metrics;
  // After an epoch whose test accuracy beat every earlier one (and after its
  // checkpoint was written to best_path, when set).
  std::function<void(const BestScore&)> on_best;

  // Continues from a checkpoint: loads it into replica 0, broadcasts, and
  // takes up its epoch, step and position in the epoch.
  void resume(const LoadedCheckpoint& checkpoint, const std::string& path);
  // Trains until every epoch is done or early stopping ends it (true), or a
  // stop was requested or the time limit passed (false; a checkpoint was
  // then written when a path is set).
  bool run();
  // After run() returned true: whether --early-stop's count of epochs without
  // improvement ended it (also before any step, when the resumed checkpoint
  // had already reached it).
  bool early_stopped() const { return early_stopped_; }
  // The best test accuracy so far (this run's and the resumed checkpoint's).
  const BestScore& best() const { return best_; }
  // After run() returned false: whether the time limit (not a request) stopped it.
  bool time_limit_reached() const { return time_limit_reached_; }
  // Asks run() to stop after the current step; safe from any thread or a
  // signal handler.
  void request_stop() { stop_requested_.store(true); }

  // Of the moving average of the weights and statistics with config.sgd.ema_decay (--ema), else of the weights.
  Evaluation evaluate(BatchSource& data);
  // After resume(): the checkpoint held no moving average, which --ema started from its weights.
  bool ema_restarted() const { return ema_restarted_; }
  CheckpointInfo checkpoint_info() const;
  // Refuses (an Error, nothing written) weights that are no longer finite.
  void save(const std::string& path);
  // "; the last good checkpoint is PATH", or "; no checkpoint was written": the end of a divergence's message.
  std::string last_good_checkpoint() const;
  std::string lower_rate_hint() const;  // what to lower when training diverged

  int64_t epoch() const { return epoch_; }
  int64_t step() const { return static_cast<int64_t>(replicas_.step()); }

private:
  ReplicaManager& replicas_;
  BatchSource& train_;
  BatchSource* test_;
  TrainerConfig config_;
  int64_t epoch_ = 0;          // epochs completed
  int64_t batch_in_epoch_ = 0; // batches of epoch_ already done
  std::atomic<bool> stop_requested_{false};
  bool time_limit_reached_ = false;
  // Tracked (and saved in each checkpoint) under --keep-best or --early-stop.
  bool tracks_best() const { return !config_.best_path.empty() || config_.early_stop > 0; }
  // Records the epoch's test accuracy; writes the best checkpoint when beaten
  // and the epoch's checkpoint again, now holding the record.
  void record_score(const Evaluation& test);
  bool early_stop_reached() const { return config_.early_stop > 0 && best_.epochs_since >= config_.early_stop; }
  BestScore best_;
  bool early_stopped_ = false;
  bool ema_restarted_ = false;
};

}  // namespace lockstep
