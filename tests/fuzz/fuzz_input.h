#pragma once
// The readers take paths: each fuzz input is written to one file per process
// (in /dev/shm when it exists) and read back from there.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace lockstep_fuzz {

inline std::string input_file(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  const std::string path = dir + "/lockstep_fuzz_" + std::to_string(getpid()) + suffix;
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) __builtin_trap();
  std::fclose(file);
  return path;
}

}  // namespace lockstep_fuzz
