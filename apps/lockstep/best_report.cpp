#include "best_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace lockstep::app {

void report_best(const TrainSettings& s, const BestScore& best, ProgressReporter& reporter) {
  nlohmann::json line{{"type", "best"}, {"epoch", best.epoch}, {"test_accuracy", best.test_accuracy}};
  if (s.keep_best) {
    const std::string path = best_checkpoint_path(s);
    std::printf("best test accuracy so far (%.2f%%): checkpoint written to %s\n", 100.0 * best.test_accuracy,
                path.c_str());
    line["checkpoint"] = path;
  } else {
    line["checkpoint"] = nullptr;
  }
  reporter.write_json(line.dump());
}

void report_early_stop(const TrainSettings& s, const BestScore& best, int64_t completed, bool resumed_stopped,
                       ProgressReporter& reporter) {
  const std::string where = s.keep_best ? "its checkpoint is " + best_checkpoint_path(s)
                                        : std::string("its checkpoint was not kept (--keep-best keeps it)");
  if (resumed_stopped)
    std::printf("%s stopped early at epoch %lld: nothing to train (a larger --early-stop than %lld goes on)\n",
                s.resume.c_str(), static_cast<long long>(completed), static_cast<long long>(s.early_stop));
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
  line["best_checkpoint"] = s.keep_best ? nlohmann::json(best_checkpoint_path(s)) : nlohmann::json(nullptr);
  reporter.write_json(line.dump());
}

}  // namespace lockstep::app
