#pragma once
// A device a tensor lives on: the CPU or one CUDA GPU by index.
#include <cstddef>
#include <string>
#include <vector>

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
// A comma-separated list of devices as parse_device reads them, repeats kept
// ("cpu,cpu": two replicas on the CPU). Throws naming `text` when it is empty.
std::vector<Device> parse_device_list(const std::string& text);
// The devices a --devices option names: "all" (every visible GPU, or the CPU
// when there is none) or a list (parse_device_list) of devices that are
// there, each named once. Throws an Error that names the option otherwise.
std::vector<Device> resolve_devices(const std::string& text);

// True when this build was compiled with the CUDA backend.
bool cuda_compiled();
// Number of CUDA devices visible at run time (0 without the backend or a driver).
int cuda_device_count();

struct GpuInfo {
  int index = 0;
  std::string name;
  size_t memory_bytes = 0;
  int major = 0, minor = 0;  // compute capability
};
// The visible GPUs (empty without the backend or a driver).
std::vector<GpuInfo> cuda_devices();
// Versions of the CUDA runtime and driver, cuDNN and NCCL, one per line, or
// why there are none.
std::string backend_versions();

}  // namespace lockstep
