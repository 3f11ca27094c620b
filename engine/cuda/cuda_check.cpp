#include "engine/cuda/cuda_check.h"

#include <cstdio>
#include <string>

#include "engine/error.h"

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

std::string cuda_status(cudaError_t status) {
  // A failed call leaves its error as the thread's "last error"; clear it so
  // the next launch check does not report this one again. Sticky errors
  // (a kernel fault) stay on the context whatever we do.
  cudaGetLastError();
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

std::string cudnn_status(cudnnStatus_t status) {
  std::string text = cudnnGetErrorString(status);
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  if (detail[0] != '\0') text += std::string(" (") + detail + ")";
  return text;
}

std::string cublas_status(cublasStatus_t status) {
  return std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")";
}

std::string nccl_status(ncclResult_t status) { return ncclGetErrorString(status); }

// The same relative path that lockstep::Error messages carry.
std::string short_path(const char* file) {
  std::string where = file;
  for (const char* top : {"/kernels/", "/engine/", "/layers/", "/data/", "/apps/", "/tests/", "/bench/"}) {
    auto pos = where.rfind(top);
    if (pos != std::string::npos) return where.substr(pos + 1);
  }
  return where;
}

void log_line(const std::string& message, const char* file, int line) {
  std::fprintf(stderr, "lockstep: %s (%s:%d)\n", message.c_str(), short_path(file).c_str(), line);
}

}  // namespace

void throw_cuda(const char* call, cudaError_t status, const char* file, int line) {
  throw_error(describe(call, cuda_status(status)), file, line);
}
void throw_cudnn(const char* call, cudnnStatus_t status, const char* file, int line) {
  throw_error(describe(call, cudnn_status(status)), file, line);
}
void throw_cublas(const char* call, cublasStatus_t status, const char* file, int line) {
  throw_error(describe(call, cublas_status(status)), file, line);
}
void throw_nccl(const char* call, ncclResult_t status, const char* file, int line) {
  throw_error(describe(call, nccl_status(status)), file, line);
}

void log_cuda(const char* call, cudaError_t status, const char* file, int line) {
  log_line(describe(call, cuda_status(status)), file, line);
}
void log_cudnn(const char* call, cudnnStatus_t status, const char* file, int line) {
  log_line(describe(call, cudnn_status(status)), file, line);
}
void log_cublas(const char* call, cublasStatus_t status, const char* file, int line) {
  log_line(describe(call, cublas_status(status)), file, line);
}
void log_nccl(const char* call, ncclResult_t status, const char* file, int line) {
  log_line(describe(call, nccl_status(status)), file, line);
}

}  // namespace lockstep::cuda_detail
