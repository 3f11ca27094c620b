#pragma once
// What the emulated cuDNN's files share: the objects behind cuDNN's opaque
// handles, the checks every execution call makes, and the thread's last error
// text (cudnnGetLastErrorString). cuDNN declares its handles as pointers to
// incomplete structs (struct cudnnContext, struct cudnnTensorStruct, ...);
// defining those structs here makes a handle a pointer to our object, so
// lockstep's unchanged code passes them around as it does with the real library.
#include <cudnn.h>

#include <cstdint>
#include <string>

struct cudnnContext {
  int device = 0;                  // current at cudnnCreate: the handle lives there
  cudaStream_t stream = nullptr;   // cudnnSetStream; nullptr = the legacy default stream
};

struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int dims[4] = {};     // n, c, h, w
  int strides[4] = {};  // in elements, used exactly as given
};

struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int dims[4] = {};  // k (output channels), c, h, w
};

struct cudnnConvolutionStruct {
  bool set = false;
  int pad[2] = {}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  int groups = 1;
};

struct cudnnPoolingStruct {
  bool set = false;
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
  int window[2] = {}, pad[2] = {}, stride[2] = {};
};

namespace lockstep::emu::cudnn {

// Records `message` as the calling thread's last error (what
// cudnnGetLastErrorString returns) and hands `status` back, so every failing
// path reads `return fail(STATUS, "why");`.
cudnnStatus_t fail(cudnnStatus_t status, const std::string& message);
std::string take_last_error();

// A message naming the call it came from: "cudnnPoolingForward: ...".
inline std::string at(const char* call, const std::string& what) { return std::string(call) + ": " + what; }

// The handle is usable now: not null, its device is the current one and its
// stream belongs to that device (what a kernel launch of the real library needs).
cudnnStatus_t check_handle(cudnnHandle_t handle, const char* call);

// `p` (with `bytes` bytes from it) is device memory of `device`.
cudnnStatus_t check_device_pointer(const void* p, size_t bytes, int device, const char* call, const char* what);

// A set descriptor of a data type the stand-in computes: CUDNN_DATA_FLOAT or
// CUDNN_DATA_BFLOAT16 (read widened exactly, computed in FP32, rounded to
// nearest even when stored). Whether a call takes that type with its other
// operands is the call's own check (PSEUDO_BFLOAT16_CONFIG and the like).
cudnnStatus_t check_tensor(cudnnTensorDescriptor_t d, const char* call, const char* what);

// Bytes per element of a data type the stand-in computes (4 or 2).
size_t element_bytes(cudnnDataType_t type);

// The bytes a strided tensor spans: (the offset of its last element + 1) * its element size.
size_t tensor_span_bytes(const cudnnTensorStruct& t);
int64_t tensor_count(const cudnnTensorStruct& t);
std::string dims_text(const int dims[4]);

// Reads the host scalars alpha/beta as cuDNN does for float data.
float scalar(const void* p);

}  // namespace lockstep::emu::cudnn
