#include "curve_drawer.h"

#include <cstdio>

namespace lockstep::app {

void CurveDrawer::draw() {
  const std::string problem = curve_.draw(png_);
  drawn_ = problem.empty();
  if (!problem.empty() && !warned_) {
    reporter_.break_line();
    std::fprintf(stderr, "notice: no training-curve picture %s: %s\n", png_.c_str(), problem.c_str());
    warned_ = true;
  }
}

}  // namespace lockstep::app
