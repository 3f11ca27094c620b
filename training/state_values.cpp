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
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    std::ostringstream what;
    if (std::isnan(v))
      what << "holds NaN";
    else if (std::isinf(v))
      what << "holds " << (v > 0 ? "+inf" : "-inf");
    else if (variance && v < 0.0f)
      what << "holds a negative variance, " << v;
    else
      continue;
    what << " (first at index " << i << " of " << values.size() << ")";
    return what.str();
  }
  return {};
}

}  // namespace lockstep
