#include "best_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace lockstep::app {

void report_best(const RunFiles& files, const BestScore& best, ProgressReporter& reporter) {
  nlohmann::json line{{"type", "best"}, {"epoch", best.epoch}, {"test_accuracy", best.test_accuracy}};
  if (files.keeps_best()) {
    const std::string& path = files.best_path;
    std::printf("best test accuracy so far (%.2f%%): checkpoint written to %s\n", 100.0 * best.test_accuracy,
                path.c_str());
    line["checkpoint"] = path;
  } else {
    line["checkpoint"] = nullptr;
  }
  reporter.write_json(line.dump());
}

void report_early_stop(const RunFiles& files, const RunPlan& plan, const BestScore& best, int64_t completed,
                       bool resumed_stopped, ProgressReporter& reporter) {
  const std::string where = files.keeps_best() ? "its checkpoint is " + files.best_path
                                               : std::string("its checkpoint was not kept (--keep-best keeps it)");
  if (resumed_stopped)
    std::printf("%s stopped early at epoch %lld: nothing to train (a larger --early-stop than %lld goes on)\n",
                files.resume_path.c_str(), static_cast<long long>(completed),
                static_cast<long long>(plan.early_stop_patience));
  else
    std::printf("stopped early after epoch %lld: the test accuracy has not improved for %lld epochs\n",
                static_cast<long long>(completed), static_cast<long long>(best.epochs_since));
  std::printf("best epoch %lld: test accuracy %.2f%%; %s\n", static_cast<long long>(best.epoch),
              100.0 * best.test_accuracy, where.c_str());
  if (resumed_stopped) return;  // the run that stopped wrote its line
  nlohmann::json line{{"type", "early_stop"},
                      {"epoch", completed},
                      {"best_epoch", best.epoch},
                      {"best_test_accuracy", best.test_accuracy}};
  line["best_checkpoint"] = files.keeps_best() ? nlohmann::json(files.best_path) : nlohmann::json(nullptr);
  reporter.write_json(line.dump());
}

}  // namespace lockstep::app
