#include "duration.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "base/error.h"

namespace lockstep::app {

Duration parse_duration(const std::string& text, const std::string& flag) {
  auto bad = [&](const std::string& why) {
    LS_FAIL(flag, " ", text, ": ", why, "; expected a duration such as 20s, 10m, 1h or 1h30m");
  };
  if (text.empty()) bad("empty");
  double total = 0.0;
  size_t pos = 0;
  while (pos < text.size()) {
    const char* start = text.c_str() + pos;
    char* end = nullptr;
    const double value = std::strtod(start, &end);
    if (end == start || !std::isdigit(static_cast<unsigned char>(*start)) || !std::isfinite(value))
      bad("'" + text.substr(pos) + "' does not start with a number");
    pos += static_cast<size_t>(end - start);
    double unit = 1.0;
    if (pos < text.size()) {
      switch (text[pos]) {
        case 's': unit = 1.0; break;
        case 'm': unit = 60.0; break;
        case 'h': unit = 3600.0; break;
        case 'd': unit = 86400.0; break;
        default: bad(std::string("unknown unit '") + text[pos] + "' (s, m, h or d)");
      }
      ++pos;
    } else if (total > 0.0) {
      bad("the last number has no unit");
    }
    total += value * unit;
  }
  if (!(total > 0.0) || !std::isfinite(total)) bad("not a positive duration");
  return {text, total};
}

}  // namespace lockstep::app
