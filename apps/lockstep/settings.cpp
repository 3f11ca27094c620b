#include "settings.h"

#include <cmath>
#include <cstdlib>

#include "base/error.h"

namespace lockstep::app {

AdamBetas parse_betas(const std::string& text) {
  const auto comma = text.find(',');
  float values[2] = {-1.0f, -1.0f};
  bool read = comma != std::string::npos;
  for (int i = 0; read && i < 2; ++i) {
    const std::string part = i == 0 ? text.substr(0, comma) : text.substr(comma + 1);
    char* end = nullptr;
    values[i] = std::strtof(part.c_str(), &end);
    read = !part.empty() && end == part.c_str() + part.size() && std::isfinite(values[i]);
  }
  LS_CHECK(read && values[0] >= 0.0f && values[0] < 1.0f && values[1] >= 0.0f && values[1] < 1.0f, "--betas '", text,
           "': expected two numbers in [0, 1) with a comma between them, as 0.9,0.999");
  return {values[0], values[1]};
}

}  // namespace lockstep::app
