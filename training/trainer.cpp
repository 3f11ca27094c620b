#include "training/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <filesystem>

#include "base/error.h"
#include "kernels/loss_math.h"
#include "ops/loss.h"
#include "training/state_values.h"

namespace lockstep {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Trainer::Trainer(ReplicaManager& replicas, BatchSource& train, BatchSource* test, TrainerConfig config)
    : replicas_(replicas), train_(train), test_(test), config_(std::move(config)) {
  LS_CHECK(config_.epochs >= 1, "epochs must be at least 1, got ", config_.epochs);
  LS_CHECK(config_.schedule.base_lr > 0.0f && std::isfinite(config_.schedule.base_lr),
           "the learning rate must be positive, got ", config_.schedule.base_lr);
  LS_CHECK(train_.num_classes() == replicas_.model(0).num_classes(), "the data has ", train_.num_classes(),
           " classes but the model was built for ", replicas_.model(0).num_classes());
  config_.schedule.total_epochs = static_cast<double>(config_.epochs);
  replicas_.prepare_optimizer(config_.sgd);
  LS_CHECK(config_.early_stop >= 0, "the early-stopping patience must not be negative, got ", config_.early_stop);
  LS_CHECK(test_ || !tracks_best(), "keeping the best checkpoint and early stopping compare test scores, and there "
           "is no test set");
}

CheckpointInfo Trainer::checkpoint_info() const {
  CheckpointInfo info;
  info.model_spec = replicas_.model(0).spec();
  info.class_names = config_.class_names;
  info.epoch = epoch_;
  info.step = step();
  info.batch_in_epoch = batch_in_epoch_;
  info.seed = config_.seed;
  info.extra = config_.checkpoint_extra;
  if (tracks_best()) best_.save_to(info.extra);
  return info;
}

std::string Trainer::lower_rate_hint() const {
  // A backbone scaled above 1 learns faster than --lr says: name the scale.
  const float scale = config_.sgd.backbone_lr_scale;
  if (scale > 1.0f) {
    char text[128];
    std::snprintf(text, sizeof text, "try a lower --backbone-lr-scale (the layers before the classifier learn at "
                  "%g x the learning rate) or --lr", scale);
    return text;
  }
  return "try a lower --lr";
}

std::string Trainer::last_good_checkpoint() const {
  // Named only when one was written (by this run or the one it resumes).
  return config_.checkpoint_path.empty() || !std::filesystem::exists(config_.checkpoint_path)
             ? std::string("; no checkpoint was written")
             : "; the last good checkpoint is " + config_.checkpoint_path;
}

void Trainer::save(const std::string& path) {
  // A step's loss is computed before its update, so the last updates of a
  // diverging run can leave weights that are not finite while every loss was:
  // such weights never replace a checkpoint. Nor do running statistics that
  // are not finite, or a negative variance (training/state_values.h): a
  // model that eval and predict would run with NaN. Every process holds the
  // same model, so each finds the same and all stop together.
  Model& model = replicas_.model(0);
  const size_t weights = model.arenas().entries().size();  // model_state_tensors: the weights first
  const std::vector<StateTensor> tensors = model_state_tensors(model);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string bad = state_value_problem(tensors[i].name, tensors[i].tensor.to_vector());
    if (bad.empty()) continue;
    train_.stop();
    const std::string when = " after step " + std::to_string(step()) + " (epoch " +
                             std::to_string(epoch_ + (batch_in_epoch_ > 0 ? 1 : 0)) + ")";
    if (i < weights)
      LS_FAIL("the weights are no longer finite", when, ": training diverged; ", lower_rate_hint(),
              last_good_checkpoint());
    LS_FAIL("the running statistics are no longer usable", when, " (", tensors[i].name, " ", bad,
            "): training diverged; ", lower_rate_hint(), last_good_checkpoint());
  }
  // The first process alone writes it.
  if (replicas_.process_rank() == 0) save_checkpoint(path, replicas_.model(0), checkpoint_info());
  if (on_checkpoint) on_checkpoint(path);
}

void Trainer::resume(const LoadedCheckpoint& checkpoint, const std::string& path) {
  LS_CHECK(checkpoint.info.model_spec == replicas_.model(0).spec(), "checkpoint ", path, " holds model '",
           checkpoint.info.model_spec, "', not '", replicas_.model(0).spec(), "'");
  load_into(replicas_.model(0), checkpoint, path);
  replicas_.broadcast_from_first();
  // A checkpoint written without --ema: the average starts from its weights (the caller says so).
  ema_restarted_ = config_.sgd.ema_decay > 0.0 && !has_ema(checkpoint);
  if (ema_restarted_) replicas_.restart_ema();
  replicas_.set_step(static_cast<uint64_t>(checkpoint.info.step));
  epoch_ = checkpoint.info.epoch;
  batch_in_epoch_ = checkpoint.info.batch_in_epoch;
  best_ = BestScore::from_metadata(checkpoint.info.extra, path);
}

void Trainer::record_score(const Evaluation& test) {
  const bool improved = best_.record(epoch_, test.accuracy);
  if (improved && !config_.best_path.empty()) save(config_.best_path);
  // Written before the evaluation so that a failing one never costs the
  // epoch; written again so that a resumed run knows this epoch's score.
  if (!config_.checkpoint_path.empty()) save(config_.checkpoint_path);
  if (improved && on_best) on_best(best_);
}

bool Trainer::run() {
  const int64_t batches = train_.batches_per_epoch();
  LS_CHECK(batches > 0, "the training set gives no batch");
  LS_CHECK(config_.time_limit_seconds >= 0.0, "the time limit must not be negative, got ", config_.time_limit_seconds);
  const auto run_start = Clock::now();
  time_limit_reached_ = false;
  // A resumed checkpoint that early stopping had ended trains no further
  // (a larger --early-stop goes on).
  early_stopped_ = batch_in_epoch_ == 0 && epoch_ < config_.epochs && early_stop_reached();
  if (early_stopped_) return true;
  while (epoch_ < config_.epochs) {
    train_.start_epoch(epoch_, batch_in_epoch_);
    replicas_.reset_phase_times();
    StepMetrics epoch_metrics;
    double data_wait = 0.0;
    auto epoch_start = Clock::now();
    const int64_t first_batch = batch_in_epoch_;
    // The trainer holds two batches (BatchSource::next's contract): the one
    // a step trains on and the next, which the step copies to the devices
    // while it computes.
    HostBatch batch, ahead;
    bool have_ahead = false, fetched_first = false;
    for (;;) {
      if (config_.time_limit_seconds > 0.0 && since(run_start) >= config_.time_limit_seconds)
        time_limit_reached_ = true;
      // Across processes all stop at the same step, whichever was asked (a
      // stop request or a time limit, each process timing its own run).
      if (replicas_.any_process(stop_requested_.load() || time_limit_reached_)) {
        train_.stop();
        if (!config_.checkpoint_path.empty()) save(config_.checkpoint_path);
        return false;
      }
      auto wait_start = Clock::now();
      if (!fetched_first) {
        fetched_first = true;
        have_ahead = train_.next(ahead);
      }
      if (!have_ahead) break;
      std::swap(batch, ahead);
      have_ahead = train_.next(ahead);
      data_wait += since(wait_start);
      float lr = config_.schedule.at(static_cast<double>(epoch_) + static_cast<double>(batch_in_epoch_) / batches);
      StepMetrics m = replicas_.train_step(batch, lr, config_.sgd, have_ahead ? &ahead : nullptr);
      double step_loss = m.loss_sum / std::max<int64_t>(m.count, 1);
      if (!std::isfinite(step_loss)) {
        train_.stop();
        LS_FAIL("the loss became ", step_loss, " at step ", step(), " (epoch ", epoch_ + 1, ", batch ",
                batch_in_epoch_ + 1, ", learning rate ", lr, "); ", lower_rate_hint(), last_good_checkpoint());
      }
      epoch_metrics += m;
      ++batch_in_epoch_;
      if (on_step) on_step(step(), step_loss);
      if (on_step_metrics) on_step_metrics(step(), m);
      if (on_progress && (batch_in_epoch_ % config_.progress_every == 0 || batch_in_epoch_ == batches)) {
        double elapsed = since(epoch_start);
        Progress p;
        p.epoch = epoch_;
        p.batch = batch_in_epoch_;
        p.batches_per_epoch = batches;
        p.step = step();
        p.lr = lr;
        p.loss = epoch_metrics.loss_sum / std::max<int64_t>(epoch_metrics.count, 1);
        p.accuracy = static_cast<double>(epoch_metrics.correct) / std::max<int64_t>(epoch_metrics.count, 1);
        p.images_per_second = epoch_metrics.count / std::max(elapsed, 1e-9);
        double per_batch = elapsed / std::max<int64_t>(batch_in_epoch_ - first_batch, 1);
        p.eta_seconds = per_batch * static_cast<double>(batches - batch_in_epoch_);
        p.data_wait_fraction = data_wait / std::max(elapsed, 1e-9);
        p.step_loss = step_loss;
        on_progress(p);
      }
    }
    EpochSummary summary;
    summary.epoch = epoch_;
    summary.seconds = since(epoch_start);
    summary.data_wait_seconds = data_wait;
    summary.train_loss = epoch_metrics.loss_sum / std::max<int64_t>(epoch_metrics.count, 1);
    summary.train_accuracy = static_cast<double>(epoch_metrics.correct) / std::max<int64_t>(epoch_metrics.count, 1);
    summary.images_per_second = epoch_metrics.count / std::max(summary.seconds, 1e-9);
    summary.phases = replicas_.phase_times();
    ++epoch_;
    batch_in_epoch_ = 0;
    // The checkpoint before the evaluation: an evaluation that fails (a bad
    // test image) never costs the epoch.
    if (!config_.checkpoint_path.empty()) save(config_.checkpoint_path);
    if (test_) {
      summary.has_test = true;
      summary.test = evaluate(*test_);
    }
    if (on_epoch) on_epoch(summary);
    if (tracks_best()) record_score(summary.test);
    // Every process evaluates the whole test set (the logits cross
    // processes), so all find the same; the vote makes them stop together.
    if (config_.early_stop > 0 && epoch_ < config_.epochs && replicas_.any_process(early_stop_reached())) {
      early_stopped_ = true;
      return true;
    }
  }
  return true;
}

Evaluation Trainer::evaluate(BatchSource& data) {
  if (config_.sgd.ema_decay <= 0.0) return evaluate_model(replicas_, data);
  // The moving average in the weights' place for the evaluation, then back (the same bits).
  replicas_.swap_ema();
  Evaluation e;
  try {
    e = evaluate_model(replicas_, data);
  } catch (...) {
    replicas_.swap_ema();
    throw;
  }
  replicas_.swap_ema();
  return e;
}

Evaluation evaluate_model(ReplicaManager& replicas, BatchSource& data) {
  const int64_t classes = replicas.model(0).num_classes();
  Evaluation e;
  e.class_total.assign(classes, 0);
  e.class_correct.assign(classes, 0);
  e.confusion.assign(static_cast<size_t>(classes * classes), 0);
  StepMetrics sums;
  Context host(Device::cpu());  // the logits come back to the host: the loss is summed there
  data.start_epoch(0, 0);
  HostBatch batch;
  while (data.next(batch)) {
    std::vector<float> logits = replicas.logits(batch);
    std::vector<int32_t> labels = batch.labels.batch_slice(0, batch.count).to_label_vector();
    for (int64_t i = 0; i < batch.count; ++i)
      LS_CHECK(labels[i] >= 0 && labels[i] < classes, "label ", labels[i], " outside [0, ", classes, ")");
    sums += ops::softmax_cross_entropy(host, Tensor::from_vector(Shape{batch.count, classes}, logits),
                                       Tensor::from_labels(labels), 1.0f, nullptr);
    for (int64_t i = 0; i < batch.count; ++i) {
      const int predicted = row_argmax(logits.data() + i * classes, static_cast<int>(classes));
      e.class_total[labels[i]] += 1;
      e.confusion[static_cast<size_t>(labels[i] * classes + predicted)] += 1;
      if (predicted == labels[i]) e.class_correct[labels[i]] += 1;
    }
    e.count += batch.count;
  }
  e.loss = sums.loss_sum / std::max<int64_t>(e.count, 1);
  e.accuracy = static_cast<double>(sums.correct) / std::max<int64_t>(e.count, 1);
  return e;
}

}  // namespace lockstep
