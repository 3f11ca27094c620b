// The emulated cuBLAS's handle: creation on the current device, stream,
// workspace, math mode and status strings.
#include <cstdint>
#include <cstdio>
#include <string>

#include "emu/cublas/internal.h"
#include "emu/runtime/emu_runtime.h"

namespace lockstep::emu::cublas {

cublasStatus_t report(cublasStatus_t status, const char* call, const char* why) {
  std::fprintf(stderr, "lockstep emulated cuBLAS: %s: %s: %s\n", call, cublasGetStatusName(status), why);
  return status;
}

cublasStatus_t check_handle(cublasHandle_t handle, const char* call) {
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, call, "the handle is null");
  // cuBLAS documents NOT_INITIALIZED for "an error in the CUDA Runtime API
  // called by the cuBLAS routine": a launch through another device's context.
  if (current_device() != handle->device)
    return report(CUBLAS_STATUS_NOT_INITIALIZED, call,
                  ("the handle was created on device " + std::to_string(handle->device) + " but device " +
                   std::to_string(current_device()) + " is current")
                      .c_str());
  if (stream_device(handle->stream) != handle->device)
    return report(CUBLAS_STATUS_EXECUTION_FAILED, call, "the handle's stream belongs to another device");
  if (handle->workspace_bytes && !is_device_range(handle->workspace, handle->workspace_bytes, handle->device))
    return report(CUBLAS_STATUS_INVALID_VALUE, call,
                  "the workspace given to cublasSetWorkspace is no longer device memory of the handle's device");
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace lockstep::emu::cublas

using namespace lockstep::emu::cublas;

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return report(CUBLAS_STATUS_INVALID_VALUE, "cublasCreate", "handle is null");
  const int device = lockstep::emu::current_device();
  if (device < 0 || device >= lockstep::emu::device_count())
    return report(CUBLAS_STATUS_NOT_INITIALIZED, "cublasCreate", "no usable current device");
  *handle = new cublasContext{device, nullptr, nullptr, 0, CUBLAS_DEFAULT_MATH};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, "cublasDestroy", "the handle is null");
  delete handle;  // queued work captured values, never the handle
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetStream", "the handle is null");
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, "cublasGetStream", "the handle is null");
  if (!stream) return report(CUBLAS_STATUS_INVALID_VALUE, "cublasGetStream", "stream is null");
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  const char* call = "cublasSetWorkspace";
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, call, "the handle is null");
  if (bytes > 0) {
    if (!workspace) return report(CUBLAS_STATUS_INVALID_VALUE, call, "workspace is null but its size is not 0");
    // cuBLAS documents a 256-byte alignment for the user workspace.
    if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0)
      return report(CUBLAS_STATUS_INVALID_VALUE, call, "the workspace is not 256-byte aligned");
    if (!lockstep::emu::is_device_range(workspace, bytes, handle->device))
      return report(CUBLAS_STATUS_INVALID_VALUE, call, "the workspace is not device memory of the handle's device");
  }
  handle->workspace = bytes ? workspace : nullptr;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetMathMode", "the handle is null");
  const int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH && base != CUBLAS_PEDANTIC_MATH &&
      base != CUBLAS_TF32_TENSOR_OP_MATH && base != CUBLAS_FP32_EMULATED_BF16X9_MATH &&
      base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
    return report(CUBLAS_STATUS_INVALID_VALUE, "cublasSetMathMode", "unknown math mode");
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, "cublasGetMathMode", "the handle is null");
  if (!mode) return report(CUBLAS_STATUS_INVALID_VALUE, "cublasGetMathMode", "mode is null");
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
#define LS_NAME(s) \
  case s: return #s;
    LS_NAME(CUBLAS_STATUS_SUCCESS)
    LS_NAME(CUBLAS_STATUS_NOT_INITIALIZED)
    LS_NAME(CUBLAS_STATUS_ALLOC_FAILED)
    LS_NAME(CUBLAS_STATUS_INVALID_VALUE)
    LS_NAME(CUBLAS_STATUS_ARCH_MISMATCH)
    LS_NAME(CUBLAS_STATUS_MAPPING_ERROR)
    LS_NAME(CUBLAS_STATUS_EXECUTION_FAILED)
    LS_NAME(CUBLAS_STATUS_INTERNAL_ERROR)
    LS_NAME(CUBLAS_STATUS_NOT_SUPPORTED)
    LS_NAME(CUBLAS_STATUS_LICENSE_ERROR)
#undef LS_NAME
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

// The texts of cuBLAS's documentation for each status.
const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "an error was detected when checking the current licensing";
    default: return "unknown error";
  }
}

}  // extern "C"
