#pragma once
// The training-curve picture of `lockstep train`: loss (top) and accuracy
// (bottom) per step, raw and smoothed, the test loss and accuracy of each
// epoch as points, and the epoch boundaries as dashed lines. Redrawn after
// every epoch so a user can watch the run.
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::app {

inline constexpr int kCurveWidth = 900, kCurveHeight = 640;  // pixels

class TrainingCurve {
public:
  explicit TrainingCurve(std::string title) : title_(std::move(title)) {}

  void add_step(int64_t step, double loss, double accuracy);
  // The end of an epoch at `step`; test figures only when `has_test`.
  void add_epoch(int64_t step, bool has_test, double test_loss, double test_accuracy);
  // Draws the PNG; "" on success, otherwise why it could not be drawn.
  std::string draw(const std::string& png) const;

private:
  struct Point {
    int64_t step;
    double loss, accuracy;
  };
  struct EpochMark {
    int64_t step;
    bool has_test;
    double loss, accuracy;
  };
  std::string title_;
  std::vector<Point> steps_;
  std::vector<EpochMark> epochs_;
};

}  // namespace lockstep::app
