// GPU test runner: with no GPU every test reports "skipped" (exit code 77,
// CTest's SKIP_RETURN_CODE) instead of passing without having run.
#include "catch_session.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/device.h"

int main(int argc, char** argv) {
  // The CPU side of every GPU-against-CPU comparison runs the im2col
  // reference convolution, the arithmetic the emulated cuDNN runs too, so a
  // difference is the GPU path's own and not the rounding of another
  // convolution algorithm amplified over deep networks and several steps
  // (the oneDNN convolution is held against the reference in
  // tests/cpu/test_conv2d_onednn.cpp). LOCKSTEP_CPU_CONV set outside wins.
  setenv("LOCKSTEP_CPU_CONV", "im2col", 0);
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  const int devices = listing ? 0 : lockstep::cuda_device_count();
  if (!listing && devices == 0) {
    std::printf("no CUDA device: GPU test skipped\n");
    return 77;
  }
  // Tests that only mean something across devices, run alone by their tag
  // (tests/CMakeLists.txt): on a machine with one GPU they are skipped, not
  // failed. Any other test spec on the command line runs as usual.
  bool needs_two = false, other_spec = false;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    if (std::strcmp(argv[i], "[nccl-abort]") == 0) needs_two = true;
    else other_spec = true;
  }
  if (!listing && needs_two && !other_spec && devices < 2) {
    std::printf("[nccl-abort] needs 2 CUDA devices, this machine has %d: skipped\n", devices);
    return 77;
  }
  return run_catch_session(argc, argv);
}
