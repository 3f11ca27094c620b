#pragma once
// `lockstep train`'s command line: the flags of the settings table
// (settings_table.h), defined on CLI11's subcommand (help text and the checks
// CLI11 makes), and what they got, parsed once into TrainSettings.
#include <cstdint>
#include <string>
#include <vector>

#include "settings.h"
#include "settings_table.h"

namespace CLI {
class App;
}  // namespace CLI

namespace lockstep::app {

class TrainFlags {
public:
  // Adds the flags to `command`, which keeps pointers into this object: both
  // live until the command has run.
  explicit TrainFlags(CLI::App& command);
  TrainFlags(const TrainFlags&) = delete;
  TrainFlags& operator=(const TrainFlags&) = delete;

  // After CLI11 parsed the command: the values given, the rest at their
  // defaults, and which flags were given. Throws on a --time-limit that is
  // not a duration.
  TrainSettings settings() const;

private:
  CLI::App& command_;
  TrainSettings values_;  // the flags CLI11 converts itself
  // One per table entry, for the flags the table's codecs read (CLI11 has
  // checked the named kinds against the names they may take, and
  // --time-limit not at all) and the switches that turn a setting off.
  // Sized once: CLI11 keeps pointers into it.
  std::vector<FlagBuffer> buffers_;
};

}  // namespace lockstep::app
