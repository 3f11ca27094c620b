#pragma once
// The settings of `lockstep train` checked once settled (given, taken from
// the checkpoint resumed, or the machine's defaults), before any data is
// read: each value in its range, and the combinations that mean nothing or
// would be ignored without a word; each setting's check is declared with it
// in the settings table (settings_table.cpp), in the table's order.
#include "settings.h"

namespace lockstep::app {

// Throws naming the first flag whose value cannot train. (The one check
// that needs the replicas' devices, --cuda-graphs on, is check_cuda_graphs
// in train_options.h, where the replicas' options are made.)
void check_settings(const TrainSettings& s);

}  // namespace lockstep::app
