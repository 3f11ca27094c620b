#pragma once
// Durations as users write them on a command line: "20s", "10m", "1h",
// "1h30m", "2d", or a bare number of seconds.
#include <string>

namespace lockstep::app {

// Seconds in `text` (positive and finite); throws naming `flag` and the text otherwise.
double parse_duration(const std::string& text, const std::string& flag);

}  // namespace lockstep::app
