// The emulator tests' own main (Catch2 v2). Two emulated devices unless the
// environment says otherwise, so the multi-device checks run by default.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char** argv) {
  setenv("LOCKSTEP_EMU_DEVICES", "2", 0);
  return Catch::Session().run(argc, argv);
}
