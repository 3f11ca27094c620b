// lockstep command-line program. For now it prints its help and runs an
// example: a small model trained on a synthetic data set on the CPU.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "engine/device.h"

int main(int argc, char** argv) {
  std::string command = argc > 1 ? argv[1] : "--help";
  if (command == "--help" || command == "-h" || command == "help") {
    std::printf(
        "lockstep: data-parallel training of image classifiers on every GPU of one machine\n\n"
        "usage: lockstep <command> [options]\n\n"
        "commands:\n"
        "  train     train a model (not yet available in this build)\n"
        "  info      devices and library versions\n");
    return 0;
  }
  if (command == "info") {
    std::printf("CUDA backend: %s, GPUs visible: %d\n", lockstep::cuda_compiled() ? "built" : "not built",
                lockstep::cuda_device_count());
    return 0;
  }
  std::fprintf(stderr, "lockstep: unknown command '%s' (see lockstep --help)\n", command.c_str());
  return 2;
}
