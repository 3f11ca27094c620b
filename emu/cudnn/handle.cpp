// The emulated cuDNN's handle, version, error strings and the checks every
// execution call shares. Work queued by the stand-ins captures values, never
// the handle, so destroying a handle with work in flight is safe.
#include <cstdio>
#include <cstring>
#include <utility>

#include "emu/cudnn/internal.h"
#include "emu/runtime/emu_runtime.h"

namespace lockstep::emu::cudnn {

namespace {
thread_local std::string last_error;
}

cudnnStatus_t fail(cudnnStatus_t status, const std::string& message) {
  last_error = std::string(cudnnGetErrorString(status)) + ": " + message;
  return status;
}

std::string take_last_error() { return std::exchange(last_error, std::string()); }

cudnnStatus_t check_handle(cudnnHandle_t handle, const char* call) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": handle is null");
  const int current = current_device();
  // The real library launches on the handle's context; with another device
  // current that launch fails inside the CUDA runtime.
  if (current != handle->device)
    return fail(CUDNN_STATUS_EXECUTION_FAILED_CUDART, std::string(call) + ": the handle was created on device " +
                                                          std::to_string(handle->device) + " but device " +
                                                          std::to_string(current) + " is current");
  const int stream_dev = stream_device(handle->stream);
  if (stream_dev != handle->device)
    return fail(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH, std::string(call) + ": the handle's stream belongs to device " +
                                                            std::to_string(stream_dev) + ", the handle to device " +
                                                            std::to_string(handle->device));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t check_device_pointer(const void* p, size_t bytes, int device, const char* call, const char* what) {
  if (!p) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": " + what + " is null");
  if (!is_device_range(p, bytes, device)) {
    auto a = find_allocation(p);
    std::string where = !a ? "not memory of any emulated device"
                        : a->kind == Allocation::Kind::pinned_host
                            ? "pinned host memory"
                            : a->device != device ? "memory of device " + std::to_string(a->device)
                                                  : "an allocation of " + std::to_string(a->bytes) +
                                                        " bytes that the " + std::to_string(bytes) +
                                                        " bytes it must hold overrun";
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": " + what + " (" + std::to_string(bytes) +
                                            " bytes) is " + where + ", not memory of device " +
                                            std::to_string(device));
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t check_tensor(cudnnTensorDescriptor_t d, const char* call, const char* what) {
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": " + what + " descriptor is null");
  if (!d->set) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": " + what + " descriptor was never set");
  if (d->type != CUDNN_DATA_FLOAT && d->type != CUDNN_DATA_BFLOAT16)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                std::string(call) + ": " + what +
                    " is neither CUDNN_DATA_FLOAT nor CUDNN_DATA_BFLOAT16 (the emulator computes those only)");
  return CUDNN_STATUS_SUCCESS;
}

size_t element_bytes(cudnnDataType_t type) { return type == CUDNN_DATA_BFLOAT16 ? 2 : sizeof(float); }

size_t tensor_span_bytes(const cudnnTensorStruct& t) {
  int64_t last = 0;
  for (int i = 0; i < 4; ++i) last += int64_t(t.dims[i] - 1) * t.strides[i];
  return size_t(last + 1) * element_bytes(t.type);
}

int64_t tensor_count(const cudnnTensorStruct& t) { return int64_t(t.dims[0]) * t.dims[1] * t.dims[2] * t.dims[3]; }

std::string dims_text(const int dims[4]) {
  return "[" + std::to_string(dims[0]) + ", " + std::to_string(dims[1]) + ", " + std::to_string(dims[2]) + ", " +
         std::to_string(dims[3]) + "]";
}

float scalar(const void* p) { return *static_cast<const float*>(p); }

}  // namespace lockstep::emu::cudnn

using namespace lockstep::emu::cudnn;
using lockstep::emu::current_device;
using lockstep::emu::device_count;
using lockstep::emu::stream_device;

extern "C" {

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
#define LS_NAME(s) \
  case s: return #s;
    LS_NAME(CUDNN_STATUS_SUCCESS)
    LS_NAME(CUDNN_STATUS_NOT_INITIALIZED)
    LS_NAME(CUDNN_STATUS_BAD_PARAM)
    LS_NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    LS_NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    LS_NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    LS_NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    LS_NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    LS_NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    LS_NAME(CUDNN_STATUS_NOT_SUPPORTED)
    LS_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    LS_NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    LS_NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    LS_NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    LS_NAME(CUDNN_STATUS_INTERNAL_ERROR)
    LS_NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    LS_NAME(CUDNN_STATUS_EXECUTION_FAILED)
    LS_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
#undef LS_NAME
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}

void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (!message || max_size == 0) return;
  std::string text = take_last_error();  // reading clears it, as in cuDNN
  std::snprintf(message, max_size, "%s", text.c_str());
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: handle is null");
  int device = current_device();
  if (device < 0 || device >= device_count())
    return fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnCreate: no usable current device");
  *handle = new cudnnContext{device, nullptr};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete handle;  // null is allowed, as in cuDNN
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnSetStream: handle is null");
  if (stream && stream_device(stream) != handle->device)
    return fail(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH,
                "cudnnSetStream: the stream belongs to device " + std::to_string(stream_device(stream)) +
                    ", the handle to device " + std::to_string(handle->device));
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  if (!handle || !stream) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetStream: null argument");
  *stream = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
