#pragma once
// Ctrl-C and SIGTERM during training: the first asks the trainer to finish
// its step and write the checkpoint, a second stops at once.
#include "training/trainer.h"

namespace lockstep::app {

// Trainer::run with Ctrl-C and SIGTERM turned into a stop request (the
// handlers before are put back after). Returns Trainer::run's result.
bool run_with_signals(Trainer& trainer);

}  // namespace lockstep::app
