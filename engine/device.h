#pragma once
// A device a tensor lives on: the CPU or one CUDA GPU by index.
#include <string>

namespace lockstep {

enum class DeviceKind { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;  // CUDA ordinal; 0 for the CPU

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int ordinal) { return {DeviceKind::cuda, ordinal}; }
  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  std::string str() const;  // "cpu" or "cuda:3"
  bool operator==(const Device& other) const = default;
};

// Parses "cpu", "cuda:N" or "N". Throws lockstep::Error naming the text otherwise.
Device parse_device(const std::string& text);

// True when this build was compiled with the CUDA backend.
bool cuda_compiled();
// Number of CUDA devices visible at run time (0 without the backend or a driver).
int cuda_device_count();

}  // namespace lockstep
