// Catch2's implementation, compiled once for every test executable (each
// defines its own main() and calls run_catch_session). It is the harness, not
// code under test, so it is built without optimisation or sanitizers (see
// tests/CMakeLists.txt): compiled into each main under ASan it took over two
// minutes per executable, a tenth of CI's sanitizer build.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.h"

int run_catch_session(int argc, char** argv) { return Catch::Session().run(argc, argv); }
