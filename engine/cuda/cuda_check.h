#pragma once
// Checks for CUDA runtime, cuDNN, cuBLAS and NCCL calls. The throwing forms
// raise lockstep::Error naming the call as written, the library's status name
// and text, the current device and file:line. The LOG forms only print the
// same line to stderr: destructors and other cleanup paths use them, since a
// throw there would terminate the program.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

namespace lockstep::cuda_detail {

[[noreturn]] void throw_cuda(const char* call, cudaError_t status, const char* file, int line);
[[noreturn]] void throw_cudnn(const char* call, cudnnStatus_t status, const char* file, int line);
[[noreturn]] void throw_cublas(const char* call, cublasStatus_t status, const char* file, int line);
[[noreturn]] void throw_nccl(const char* call, ncclResult_t status, const char* file, int line);

void log_cuda(const char* call, cudaError_t status, const char* file, int line);
void log_cudnn(const char* call, cudnnStatus_t status, const char* file, int line);
void log_cublas(const char* call, cublasStatus_t status, const char* file, int line);
void log_nccl(const char* call, ncclResult_t status, const char* file, int line);

}  // namespace lockstep::cuda_detail

#define LS_DETAIL_CHECK(kind, type, ok, call)                                       \
  do {                                                                              \
    type ls_status_ = (call);                                                       \
    if (ls_status_ != (ok)) ::lockstep::cuda_detail::throw_##kind(#call, ls_status_, __FILE__, __LINE__); \
  } while (0)
#define LS_DETAIL_LOG(kind, type, ok, call)                                         \
  do {                                                                              \
    type ls_status_ = (call);                                                       \
    if (ls_status_ != (ok)) ::lockstep::cuda_detail::log_##kind(#call, ls_status_, __FILE__, __LINE__); \
  } while (0)

#define LS_CUDA_CHECK(call) LS_DETAIL_CHECK(cuda, cudaError_t, cudaSuccess, call)
#define LS_CUDNN_CHECK(call) LS_DETAIL_CHECK(cudnn, cudnnStatus_t, CUDNN_STATUS_SUCCESS, call)
#define LS_CUBLAS_CHECK(call) LS_DETAIL_CHECK(cublas, cublasStatus_t, CUBLAS_STATUS_SUCCESS, call)
#define LS_NCCL_CHECK(call) LS_DETAIL_CHECK(nccl, ncclResult_t, ncclSuccess, call)

#define LS_CUDA_LOG(call) LS_DETAIL_LOG(cuda, cudaError_t, cudaSuccess, call)
#define LS_CUDNN_LOG(call) LS_DETAIL_LOG(cudnn, cudnnStatus_t, CUDNN_STATUS_SUCCESS, call)
#define LS_CUBLAS_LOG(call) LS_DETAIL_LOG(cublas, cublasStatus_t, CUBLAS_STATUS_SUCCESS, call)
#define LS_NCCL_LOG(call) LS_DETAIL_LOG(nccl, ncclResult_t, ncclSuccess, call)

// After a kernel launch: a bad configuration (grid, shared memory, no device)
// shows up only in cudaGetLastError; the message names the kernel.
#define LS_CUDA_CHECK_LAUNCH(kernel_name)                                                              \
  do {                                                                                                 \
    cudaError_t ls_status_ = cudaGetLastError();                                                       \
    if (ls_status_ != cudaSuccess)                                                                     \
      ::lockstep::cuda_detail::throw_cuda("launch of " kernel_name, ls_status_, __FILE__, __LINE__);   \
  } while (0)
