#pragma once
// What `lockstep train` shows while it trains: a progress bar on a terminal
// (plain lines otherwise), one summary line per epoch, a one-time notice when
// the loader is the bottleneck, the per-class table at the end, and the
// optional JSON-lines metrics file.
#include <cstdio>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "training/trainer.h"
#include "metrics_file.h"

namespace lockstep::app {

class ProgressReporter {
public:
  ProgressReporter(int64_t epochs, int loader_threads, const std::string& metrics_path, bool append_metrics);
  ~ProgressReporter();

  void step(const Progress& p);                  // every few steps: the bar or a line
  void step_loss(int64_t step, double loss, double accuracy);  // every step: a metrics line
  // Bad images left out (--skip-bad-images): the count and the first few on
  // stderr, every one of them as a line of the metrics file.
  void skipped(const data::BadFiles& files, const std::string& metrics_path);
  void epoch(const EpochSummary& s);
  void per_class_table(const Evaluation& e, const std::vector<std::string>& class_names);
  // At the end of a run: a notice when the steps waited for data more than
  // data_wait_notice of the epochs' time, with the remedies.
  void data_wait_summary();
  static constexpr double data_wait_notice = 0.05;
  // Ends a progress bar line before other output.
  void break_line();
  // A line of the metrics file (none open: nothing).
  void write_json(const std::string& line);

private:

  int64_t epochs_;
  int loader_threads_;
  bool terminal_;
  bool bar_open_ = false;
  bool warned_data_ = false;
  int64_t last_plain_decile_ = -1;
  double trained_seconds_ = 0.0, waited_seconds_ = 0.0;  // over this run's epochs
  MetricsFile metrics_;
};

// The progress of a long job counted in items (`lockstep cache`): a bar with
// the rate and ETA on a terminal, a line per tenth otherwise; finish() ends it.
class CountProgress {
public:
  CountProgress(std::string what, int64_t total);
  ~CountProgress() { finish(); }
  void update(int64_t done);
  void finish();

private:
  std::string what_;
  int64_t total_;
  bool terminal_;
  bool bar_open_ = false;
  int64_t last_decile_ = -1;
  double start_;
};

// "1:02:03" or "2:03".
std::string format_duration(double seconds);

}  // namespace lockstep::app
