#include "time_limit_report.h"

#include <cstdio>

namespace lockstep::app {

int finish_at_time_limit(const RunFiles& files, const RunPlan& plan, Trainer& trainer, data::Loader* test_loader,
                         const data::Dataset& train_set, ProgressReporter& reporter, CurveDrawer& curve,
                         Evaluation last_test) {
  const CheckpointInfo at = trainer.checkpoint_info();
  const std::string& limit = plan.wall_time_limit->text;
  if (test_loader && at.batch_in_epoch > 0) {
    last_test = trainer.evaluate(*test_loader);
    std::printf("time limit %s reached: test loss %.4f acc %.2f%% at epoch %lld, batch %lld (step %lld)\n",
                limit.c_str(), last_test.loss, 100.0 * last_test.accuracy,
                static_cast<long long>(at.epoch + 1), static_cast<long long>(at.batch_in_epoch),
                static_cast<long long>(at.step));
    curve.add_epoch(at.step, true, last_test.loss, last_test.accuracy);
  } else {
    std::printf("time limit %s reached at the end of epoch %lld (step %lld)\n", limit.c_str(),
                static_cast<long long>(at.epoch), static_cast<long long>(at.step));
  }
  curve.draw();
  if (last_test.count > 0) reporter.per_class_table(last_test, train_set.class_names());
  std::printf("checkpoint written to %s\nresume with: lockstep train --resume %s --time-limit %s%s\n",
              files.checkpoint_path.c_str(), files.checkpoint_path.c_str(), limit.c_str(), plan.resume_flags.c_str());
  if (curve.drawn()) std::printf("training curve: %s\n", curve.png().c_str());
  return 0;
}

}  // namespace lockstep::app
