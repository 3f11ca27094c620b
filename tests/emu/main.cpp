// The emulator tests' own main (Catch2 v2). Two emulated devices unless the
// environment says otherwise, so the multi-device checks run by default.
#include "catch_session.h"

#include <cstdlib>

int main(int argc, char** argv) {
  setenv("LOCKSTEP_EMU_DEVICES", "2", 0);
  return run_catch_session(argc, argv);
}
