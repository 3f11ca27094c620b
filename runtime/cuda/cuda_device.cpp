// The CUDA build's answers to runtime/device.h (the CPU-only build defines
// them in runtime/device.cpp).
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "runtime/device.h"

namespace lockstep {

bool cuda_compiled() { return true; }

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    // No driver, no device or a driver older than the runtime: the caller
    // falls back to the CPU, so this is an answer, not an error.
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::vector<GpuInfo> cuda_devices() {
  std::vector<GpuInfo> out;
  for (int i = 0; i < cuda_device_count(); ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    out.push_back({i, prop.name, prop.totalGlobalMem, prop.major, prop.minor});
  }
  return out;
}

namespace {
// CUDA encodes versions as 1000*major + 10*minor.
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
}  // namespace

std::string backend_versions() {
  std::string out;
  int runtime = 0, driver = 0;
  out += "CUDA runtime " + (cudaRuntimeGetVersion(&runtime) == cudaSuccess ? cuda_version_text(runtime) : "?");
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0)
    out += ", driver supports CUDA " + cuda_version_text(driver);
  else
    out += ", no CUDA driver";
  cudaGetLastError();
  size_t cudnn = cudnnGetVersion();  // major*10000 + minor*100 + patch in cuDNN 9
  out += "\ncuDNN " + std::to_string(cudnn / 10000) + "." + std::to_string(cudnn / 100 % 100) + "." +
         std::to_string(cudnn % 100);
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess)
    out += "\nNCCL " + std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." +
           std::to_string(nccl % 100);
  return out;
}

}  // namespace lockstep
