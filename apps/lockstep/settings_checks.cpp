#include "settings_checks.h"

#include "base/error.h"
#include "settings_table.h"

namespace lockstep::app {

void check_settings(const TrainSettings& s, const std::vector<Device>& devices) {
  for (const SettingEntry& e : train_setting_table())
    if (e.check) e.check(s);
  // The one check that needs the devices.
  LS_CHECK(s.cuda_graphs != "on" || devices[0].is_cuda(),
           "--cuda-graphs on replays GPU steps from CUDA graphs; this run is on the CPU (--devices ", s.devices, ")");
}

}  // namespace lockstep::app
