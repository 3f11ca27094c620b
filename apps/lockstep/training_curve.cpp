#include "training_curve.h"

#include <algorithm>
#include <sstream>

#include "base/gnuplot.h"

namespace lockstep::app {

using gnuplot::number;
using gnuplot::quoted;

void TrainingCurve::add_step(int64_t step, double loss, double accuracy) { steps_.push_back({step, loss, accuracy}); }

void TrainingCurve::add_epoch(int64_t step, bool has_test, double test_loss, double test_accuracy) {
  epochs_.push_back({step, has_test, test_loss, test_accuracy});
}

std::string TrainingCurve::draw(const std::string& png) const {
  // A trailing mean over about a fiftieth of the run: single steps are noisy
  // (one batch each), the trend is what a user watches for.
  const size_t window = std::clamp<size_t>(steps_.size() / 50, 1, 200);
  std::ostringstream s;
  s << "$steps << EOD\n";
  double loss_sum = 0.0, accuracy_sum = 0.0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    loss_sum += steps_[i].loss;
    accuracy_sum += steps_[i].accuracy;
    if (i >= window) {
      loss_sum -= steps_[i - window].loss;
      accuracy_sum -= steps_[i - window].accuracy;
    }
    const double n = static_cast<double>(std::min(i + 1, window));
    s << steps_[i].step << " " << number(steps_[i].loss) << " " << number(100.0 * steps_[i].accuracy) << " "
      << number(loss_sum / n) << " " << number(100.0 * accuracy_sum / n) << "\n";
  }
  s << "EOD\n$epochs << EOD\n";
  bool any_test = false;
  for (const EpochMark& e : epochs_) {
    s << e.step << " " << (e.has_test ? number(e.loss) : "?") << " " << (e.has_test ? number(100.0 * e.accuracy) : "?")
      << "\n";
    any_test = any_test || e.has_test;
  }
  s << "EOD\n";
  // gnuplot refuses to plot a data block without a valid point: draw a
  // placeholder until the first step.
  if (steps_.empty()) s << "$steps << EOD\n0 ? ? ? ?\nEOD\n";
  for (size_t k = 0; k < epochs_.size(); ++k)
    s << "set arrow " << k + 1 << " from " << epochs_[k].step << ", graph 0 to " << epochs_[k].step
      << ", graph 1 nohead dashtype 2 linecolor rgb 'gray60'\n";
  s << "set multiplot layout 2,1 title " << quoted(title_) << "\n"
    << "set grid\nset key top right\nset lmargin 10\nset xrange [0:*]\n"
    << "set ylabel 'loss'\nset yrange [0:*]\nset format x ''\n"
    << "plot $steps using 1:2 with lines linecolor rgb '#c6dbef' title 'train (step)', "
    << "$steps using 1:4 with lines linewidth 2 linecolor rgb '#2171b5' title 'train (smoothed)'";
  if (any_test) s << ", $epochs using 1:2 with linespoints pointtype 7 linewidth 2 linecolor rgb '#d94801' title 'test (epoch)'";
  s << "\nset key bottom right\nset ylabel 'accuracy (%)'\nset yrange [0:100]\nset format x '%g'\nset xlabel 'step'\n"
    << "plot $steps using 1:3 with lines linecolor rgb '#c7e9c0' title 'train (step)', "
    << "$steps using 1:5 with lines linewidth 2 linecolor rgb '#238b45' title 'train (smoothed)'";
  if (any_test) s << ", $epochs using 1:3 with linespoints pointtype 7 linewidth 2 linecolor rgb '#d94801' title 'test (epoch)'";
  s << "\nunset multiplot\n";
  return gnuplot::draw_png(png, kCurveWidth, kCurveHeight, s.str());
}

}  // namespace lockstep::app
