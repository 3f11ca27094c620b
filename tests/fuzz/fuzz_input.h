#pragma once
// The readers take paths: each fuzz input is written to one file per process
// (in /dev/shm when it exists) and read back from there, and removed when
// the process exits.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace lockstep_fuzz {

// Removes the process's input files when it exits, so a fuzzing run leaves none behind.
struct InputFiles {
  std::vector<std::string> paths;
  ~InputFiles() {
    for (const std::string& path : paths) std::remove(path.c_str());
  }
};

inline std::string input_file(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  static InputFiles written;
  const std::string path = dir + "/lockstep_fuzz_" + std::to_string(getpid()) + suffix;
  if (std::find(written.paths.begin(), written.paths.end(), path) == written.paths.end()) written.paths.push_back(path);
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) __builtin_trap();
  std::fclose(file);
  return path;
}

}  // namespace lockstep_fuzz
