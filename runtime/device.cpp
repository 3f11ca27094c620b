#include "runtime/device.h"

#include <cctype>

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

#if !LOCKSTEP_WITH_CUDA
bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
std::vector<GpuInfo> cuda_devices() { return {}; }
std::string backend_versions() { return "this build has no CUDA backend (configured without a CUDA compiler)"; }
#endif

}  // namespace lockstep
