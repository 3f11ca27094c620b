#pragma once
// The settings of `lockstep train` checked once settled (given, taken from
// the checkpoint resumed, or the machine's defaults), before any data is
// read: each value in its range, and the combinations that mean nothing or
// would be ignored without a word; each setting's check is declared with it
// in the settings table (settings_table.cpp), in the table's order.
#include <vector>

#include "runtime/device.h"
#include "settings.h"

namespace lockstep::app {

// Throws naming the first flag whose value cannot train; `devices`: the replicas'.
void check_settings(const TrainSettings& s, const std::vector<Device>& devices);

}  // namespace lockstep::app
