#pragma once
// Durations as users write them on a command line: "20s", "10m", "1h",
// "1h30m", "2d", or a bare number of seconds.
#include <string>

namespace lockstep::app {

// A duration as the user wrote it, which messages repeat ("time limit 1h30m
// reached"), and in seconds.
struct Duration {
  std::string text;
  double seconds = 0.0;
};

// `text` as a Duration (positive and finite); throws naming `flag` and the text otherwise.
Duration parse_duration(const std::string& text, const std::string& flag);

}  // namespace lockstep::app
