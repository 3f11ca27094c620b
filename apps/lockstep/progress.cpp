#include "progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace lockstep::app {

std::string format_duration(double seconds) {
  long total = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (total >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", total / 60, total % 60);
  return buf;
}

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

CountProgress::CountProgress(std::string what, int64_t total)
    : what_(std::move(what)), total_(total), terminal_(isatty(STDERR_FILENO) != 0), start_(now_seconds()) {}

void CountProgress::update(int64_t done) {
  const double fraction = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  const double elapsed = now_seconds() - start_;
  const double rate = elapsed > 0.0 ? static_cast<double>(done) / elapsed : 0.0;
  const double eta = rate > 0.0 ? static_cast<double>(total_ - done) / rate : 0.0;
  if (terminal_) {
    const int width = 30;
    const int filled = static_cast<int>(fraction * width);
    std::string bar(filled, '=');
    if (filled < width) bar += '>' + std::string(width - filled - 1, ' ');
    std::fprintf(stderr, "\r%s [%s] %3.0f%% %lld/%lld %6.0f/s ETA %s   ", what_.c_str(), bar.c_str(), 100.0 * fraction,
                 static_cast<long long>(done), static_cast<long long>(total_), rate, format_duration(eta).c_str());
    std::fflush(stderr);
    bar_open_ = true;
    return;
  }
  const int64_t decile = static_cast<int64_t>(fraction * 10);
  if (decile == last_decile_) return;
  last_decile_ = decile;
  std::fprintf(stderr, "%s %lld/%lld (%.0f%%) %.0f/s ETA %s\n", what_.c_str(), static_cast<long long>(done),
               static_cast<long long>(total_), 100.0 * fraction, rate, format_duration(eta).c_str());
}

void CountProgress::finish() {
  if (bar_open_) std::fputc('\n', stderr);
  bar_open_ = false;
}

ProgressReporter::ProgressReporter(int64_t epochs, int loader_threads, const std::string& metrics_path,
                                   bool append_metrics)
    : epochs_(epochs), loader_threads_(loader_threads), terminal_(isatty(STDERR_FILENO) != 0) {
  if (!metrics_path.empty()) {
    metrics_.open(metrics_path, append_metrics);
  }
}

ProgressReporter::~ProgressReporter() { break_line(); }

void ProgressReporter::break_line() {
  if (bar_open_) std::fputc('\n', stderr);
  bar_open_ = false;
}

void ProgressReporter::write_json(const std::string& line) {
  metrics_.write_line(line);
}

void ProgressReporter::step_loss(int64_t step, double loss, double accuracy) {
  write_json(nlohmann::json{{"type", "step"}, {"step", step}, {"loss", loss}, {"accuracy", accuracy}}.dump());
}

void ProgressReporter::skipped(const data::BadFiles& files, const std::string& metrics_path) {
  if (files.empty()) return;
  break_line();
  std::fprintf(stderr, "%s\n", files.summary().c_str());
  if (files.count > static_cast<int64_t>(data::BadFiles::max_listed))
    std::fprintf(stderr, "%s\n",
                 metrics_path.empty() ? "(--metrics PATH lists every skipped file)"
                                      : ("(every skipped file is listed in " + metrics_path + ")").c_str());
  for (const data::BadFile& f : files.files)
    write_json(nlohmann::json{{"type", "skipped"}, {"file", f.path}, {"reason", f.message}}.dump());
}

void ProgressReporter::step(const Progress& p) {
  if (!warned_data_ && p.batch >= 20 && p.data_wait_fraction > 0.1) {
    break_line();
    std::fprintf(stderr,
                 "notice: %.0f%% of the step time is spent waiting for data: the loader is the bottleneck; "
                 "give it more threads with --threads (now %d)\n",
                 100.0 * p.data_wait_fraction, loader_threads_);
    warned_data_ = true;
  }
  double fraction = static_cast<double>(p.batch) / std::max<int64_t>(p.batches_per_epoch, 1);
  if (terminal_) {
    const int width = 30;
    int filled = static_cast<int>(fraction * width);
    std::string bar(filled, '=');
    if (filled < width) bar += '>' + std::string(width - filled - 1, ' ');
    std::fprintf(stderr, "\repoch %lld/%lld [%s] %3.0f%% loss %.4f acc %5.2f%% %6.0f img/s ETA %s   ",
                 static_cast<long long>(p.epoch + 1), static_cast<long long>(epochs_), bar.c_str(), 100.0 * fraction,
                 p.loss, 100.0 * p.accuracy, p.images_per_second, format_duration(p.eta_seconds).c_str());
    std::fflush(stderr);
    bar_open_ = true;
    return;
  }
  int64_t decile = static_cast<int64_t>(fraction * 10);
  if (decile == last_plain_decile_ || decile >= 10) return;
  last_plain_decile_ = decile;
  std::fprintf(stderr, "epoch %lld/%lld batch %lld/%lld loss %.4f acc %.2f%% %.0f img/s ETA %s\n",
               static_cast<long long>(p.epoch + 1), static_cast<long long>(epochs_), static_cast<long long>(p.batch),
               static_cast<long long>(p.batches_per_epoch), p.loss, 100.0 * p.accuracy, p.images_per_second,
               format_duration(p.eta_seconds).c_str());
}

void ProgressReporter::epoch(const EpochSummary& s) {
  break_line();
  last_plain_decile_ = -1;
  std::printf("epoch %lld/%lld: train loss %.4f acc %.2f%%", static_cast<long long>(s.epoch + 1),
              static_cast<long long>(epochs_), s.train_loss, 100.0 * s.train_accuracy);
  if (s.has_test) std::printf(" | test loss %.4f acc %.2f%%", s.test.loss, 100.0 * s.test.accuracy);
  std::printf(" | %.0f img/s | %.1f s\n", s.images_per_second, s.seconds);
  trained_seconds_ += s.seconds;
  waited_seconds_ += s.data_wait_seconds;
  std::fflush(stdout);
  nlohmann::json j{{"type", "epoch"},
                   {"epoch", s.epoch + 1},
                   {"train_loss", s.train_loss},
                   {"train_accuracy", s.train_accuracy},
                   {"images_per_second", s.images_per_second},
                   {"seconds", s.seconds},
                   {"data_wait_seconds", s.data_wait_seconds},
                   {"phases",
                    {{"data", s.phases.data},
                     {"forward", s.phases.forward},
                     {"backward", s.phases.backward},
                     {"communication", s.phases.communication},
                     {"update", s.phases.update}}}};
  if (s.has_test) {
    j["test_loss"] = s.test.loss;
    j["test_accuracy"] = s.test.accuracy;
  }
  write_json(j.dump());
}

void ProgressReporter::data_wait_summary() {
  if (trained_seconds_ <= 0.0 || waited_seconds_ <= data_wait_notice * trained_seconds_) return;
  break_line();
  std::fprintf(stderr,
               "notice: the steps waited for data %.0f%% of the training time (%.1f s of %.1f s): the loader was the "
               "bottleneck; give it more threads with --threads (now %d), or decode the images once with "
               "`lockstep cache`\n",
               100.0 * waited_seconds_ / trained_seconds_, waited_seconds_, trained_seconds_, loader_threads_);
}

void ProgressReporter::per_class_table(const Evaluation& e, const std::vector<std::string>& names) {
  break_line();
  size_t width = 5;
  for (const auto& n : names) width = std::max(width, n.size());
  std::printf("%-*s  accuracy  correct/total\n", static_cast<int>(width), "class");
  for (size_t c = 0; c < e.class_total.size(); ++c) {
    std::string name = c < names.size() ? names[c] : std::to_string(c);
    double acc = e.class_total[c] ? 100.0 * e.class_correct[c] / e.class_total[c] : 0.0;
    std::printf("%-*s  %7.2f%%  %lld/%lld\n", static_cast<int>(width), name.c_str(), acc,
                static_cast<long long>(e.class_correct[c]), static_cast<long long>(e.class_total[c]));
  }
  std::printf("%-*s  %7.2f%%  (loss %.4f over %lld samples)\n", static_cast<int>(width), "all", 100.0 * e.accuracy,
              e.loss, static_cast<long long>(e.count));
}

}  // namespace lockstep::app
