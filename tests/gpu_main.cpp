// GPU test runner: with no GPU every test reports "skipped" (exit code 77,
// CTest's SKIP_RETURN_CODE) instead of passing without having run.
#include "catch_session.h"

#include <cstdio>
#include <cstring>

#include "runtime/device.h"

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  if (!listing && lockstep::cuda_device_count() == 0) {
    std::printf("no CUDA device: GPU test skipped\n");
    return 77;
  }
  return run_catch_session(argc, argv);
}
