#include "settings_checks.h"

#include "settings_table.h"

namespace lockstep::app {

void check_settings(const TrainSettings& s) {
  for (const SettingEntry& e : train_setting_table())
    if (e.check) e.check(s);
}

}  // namespace lockstep::app
