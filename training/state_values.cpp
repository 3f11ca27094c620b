#include "training/state_values.h"

#include <cmath>
#include <sstream>

namespace lockstep {

bool is_running_variance(const std::string& name) {
  const std::string suffix = "running_var";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string state_value_problem(const std::string& name, const std::vector<float>& values) {
  const bool variance = is_running_variance(name);
  // A stream is built only for the value at fault: one a value cost more
  // than reading the weights did (a VGG's 138 million values, 30 s).
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (std::isfinite(v) && !(variance && v < 0.0f)) continue;
    std::ostringstream what;
    if (std::isnan(v))
      what << "holds NaN";
    else if (std::isinf(v))
      what << "holds " << (v > 0 ? "+inf" : "-inf");
    else
      what << "holds a negative variance, " << v;
    what << " (first at index " << i << " of " << values.size() << ")";
    return what.str();
  }
  return {};
}

}  // namespace lockstep
