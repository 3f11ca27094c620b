#include "base/cuda/cuda_check.h"

#include <cstdio>
#include <string>

#include "base/error.h"

namespace lockstep::cuda_detail {
namespace {

std::string current_device() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return "an unknown device";
  }
  return "cuda:" + std::to_string(device);
}

std::string describe(const char* call, const std::string& status) {
  return std::string(call) + " failed: " + status + " on " + current_device();
}

std::string status_text(cudaError_t status) {
  // A failed call leaves its error as the thread's "last error"; clear it so
  // the next launch check does not report this one again. Sticky errors
  // (a kernel fault) stay on the context whatever we do.
  cudaGetLastError();
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

std::string status_text(cudnnStatus_t status) {
  std::string text = cudnnGetErrorString(status);
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  if (detail[0] != '\0') text += std::string(" (") + detail + ")";
  return text;
}

std::string status_text(cublasStatus_t status) {
  return std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")";
}

std::string status_text(ncclResult_t status) { return ncclGetErrorString(status); }

void log_line(const std::string& message, const char* file, int line) {
  std::fprintf(stderr, "lockstep: %s (%s:%d)\n", message.c_str(), source_path(file).c_str(), line);
}

}  // namespace

template <typename Status> void throw_status(const char* call, Status status, const char* file, int line) {
  throw_error(describe(call, status_text(status)), file, line);
}
template <typename Status> void log_status(const char* call, Status status, const char* file, int line) {
  log_line(describe(call, status_text(status)), file, line);
}

#define LS_DETAIL_INSTANTIATE(Status)                                                  \
  template void throw_status<Status>(const char*, Status, const char*, int);          \
  template void log_status<Status>(const char*, Status, const char*, int);
LS_DETAIL_INSTANTIATE(cudaError_t)
LS_DETAIL_INSTANTIATE(cudnnStatus_t)
LS_DETAIL_INSTANTIATE(cublasStatus_t)
LS_DETAIL_INSTANTIATE(ncclResult_t)
#undef LS_DETAIL_INSTANTIATE

}  // namespace lockstep::cuda_detail
