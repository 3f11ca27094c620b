#include "runtime/device.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "base/error.h"

namespace lockstep {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  std::string number = text.rfind("cuda:", 0) == 0 ? text.substr(5) : text;
  bool digits = !number.empty() && number.size() < 4;
  for (char c : number) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  LS_CHECK(digits, "unknown device '", text, "': expected cpu, cuda:N or N");
  return Device::cuda(std::stoi(number));
}

std::vector<Device> parse_device_list(const std::string& text) {
  std::vector<Device> devices;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) devices.push_back(parse_device(item));
  LS_CHECK(!devices.empty(), "empty device list '", text, "'");
  return devices;
}

std::vector<Device> resolve_devices(const std::string& text) {
  const int gpus = cuda_device_count();
  std::vector<Device> devices;
  if (text == "all") {
    for (int i = 0; i < gpus; ++i) devices.push_back(Device::cuda(i));
    if (devices.empty()) devices.push_back(Device::cpu());
    return devices;
  }
  LS_CHECK(!text.empty(), "--devices is empty");
  for (const Device& d : parse_device_list(text)) {
    LS_CHECK(d.is_cpu() || d.index < gpus, "--devices ", text, ": there is no GPU ", d.index, " (this machine has ",
             gpus, gpus == 1 ? " GPU)" : " GPUs)");
    LS_CHECK(std::find(devices.begin(), devices.end(), d) == devices.end(), "--devices ", text, " names ", d.str(),
             " twice");
    devices.push_back(d);
  }
  return devices;
}

#if !LOCKSTEP_WITH_CUDA
bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
std::vector<GpuInfo> cuda_devices() { return {}; }
std::string backend_versions() { return "this build has no CUDA backend (configured without a CUDA compiler)"; }
#endif

}  // namespace lockstep
