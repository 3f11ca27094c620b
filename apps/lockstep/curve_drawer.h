#pragma once
// The training curve of a run while it trains (training_curve.h draws the
// picture): the PNG redrawn after every epoch, so a user can watch it, and a
// problem drawing it (no gnuplot) told once, not after every epoch.
#include <cstdint>
#include <string>

#include "progress.h"
#include "training_curve.h"

namespace lockstep::app {

class CurveDrawer {
public:
  CurveDrawer(std::string title, std::string png, ProgressReporter& reporter)
      : curve_(std::move(title)), png_(std::move(png)), reporter_(reporter) {}
  const std::string& png() const { return png_; }
  void add_step(int64_t step, double loss, double accuracy) { curve_.add_step(step, loss, accuracy); }
  void add_epoch(int64_t step, bool has_test, double test_loss, double test_accuracy) {
    curve_.add_epoch(step, has_test, test_loss, test_accuracy);
  }
  // Whether the last draw() made the picture (no gnuplot: no picture to name).
  bool drawn() const { return drawn_; }
  // Draws the PNG again; a problem drawing it is told once, on stderr.
  void draw();

private:
  TrainingCurve curve_;
  std::string png_;
  ProgressReporter& reporter_;
  bool warned_ = false;
  bool drawn_ = false;
};

}  // namespace lockstep::app
