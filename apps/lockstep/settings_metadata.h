#pragma once
// The training settings in a checkpoint's metadata, through the settings
// table (settings_table.h): written, read back, and compared on resume.
#include <map>
#include <string>
#include <vector>

#include "given_flags.h"
#include "settings.h"

namespace lockstep::app {

// A setting of a resumed run that differs from its checkpoint's.
struct SettingChange {
  std::string flag;          // "--seed"
  std::string key;           // "seed", the metadata's name
  std::string saved, given;  // as the metadata writes them
  bool epoch_shape = false;  // cannot change mid-epoch (OnResume::epoch_shape)
  bool is_switch = false;    // a flag without a value
  bool fixed = false;        // cannot change at all (OnResume::fixed)
};
// The settings whose change makes a resumed run another run (data drawn,
// batch, seed, precision, model options), where `s` differs from `meta`.
std::vector<SettingChange> meaning_changes(const TrainSettings& s, const std::map<std::string, std::string>& meta);

// The settings as checkpoint metadata, and back (only those not in
// `s.given`). Returns `s.given` plus the flags whose values came from the
// metadata, so the machine's defaults fill only what is left.
std::map<std::string, std::string> to_metadata(const TrainSettings& s);
GivenFlags from_metadata(TrainSettings& s, const std::map<std::string, std::string>& meta);

}  // namespace lockstep::app
