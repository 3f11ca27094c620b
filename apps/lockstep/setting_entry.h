#pragma once
// One row of the settings table (settings_table.h): what is said of one
// `lockstep train` setting, which each consumer of the table reads.
#include <functional>
#include <string>
#include <vector>

#include "settings.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace lockstep::app {

// What a resumed run may do with a saved setting that differs from its
// checkpoint's.
enum class OnResume {
  may_change,   // the learning rate, its schedule, the epoch count, the test set: what resuming is for
  another_run,  // what the run trains on and how its steps are drawn: refused unless --force
  epoch_shape,  // as another_run, and never mid-epoch: the position in the epoch would mean nothing
  fixed,        // never, not even with --force: the checkpoint's state belongs to it (the optimizer)
};

// What a flag binds to while CLI11 parses, when not the field itself: the
// text of a value the table's codec reads (an enum, a duration), or a switch
// that turns its setting off (--no-dropout).
struct FlagBuffer {
  std::string text;
  bool on = false;
};

struct SettingEntry {
  std::string flag;  // "--seed"
  std::string help;  // as --help prints it
  std::string key;   // the checkpoint metadata's name, "seed"; "" when not saved
  OnResume on_resume = OnResume::may_change;
  bool agreed = false;         // every process of a run must hold the same value
  std::string agreement_name;  // how the agreement names it when the flag alone would mislead
  bool is_switch = false;      // a flag without a value, which messages show with its key and value
  // The value as text (the metadata's, and what is compared), and back;
  // read() throws on text that is no value of the field.
  std::function<std::string(const TrainSettings&)> text;
  std::function<void(TrainSettings&, const std::string&)> read;
  // read() throws its own message, which names the values it knows: a
  // checkpoint's value is read after the others and its error not reworded.
  bool reads_in_own_words = false;
  // What the processes compare when not text(): a file's contents, not its path.
  std::function<std::string(const TrainSettings&)> agreement_text;
  // Adds the flag to a command, bound to `values`' field or to `buffer`.
  std::function<CLI::Option*(CLI::App&, TrainSettings& values, FlagBuffer& buffer)> bind;
  // After parsing, when the flag was given and bound to the buffer: the field from it.
  std::function<void(TrainSettings&, const FlagBuffer&)> take_buffer;
  // Throws naming the flag when the settled value cannot train (also against
  // the settings it combines with).
  std::function<void(const TrainSettings&)> check;
  // The start report's lines about the setting, when it has any to say.
  std::function<void(const TrainSettings&)> start_note;
  // Sets the value for the machine when the flag was neither given nor taken
  // from a checkpoint (apply_defaults), from the settled settings and the
  // device the first replica runs on; unset, the field's initial value stays.
  std::function<void(TrainSettings&, Device)> machine_default;

  // The name the processes' agreement gives the setting.
  const std::string& agreement_label() const { return agreement_name.empty() ? flag : agreement_name; }
};

}  // namespace lockstep::app
