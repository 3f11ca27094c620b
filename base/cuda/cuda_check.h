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

// Status is cudaError_t, cudnnStatus_t, cublasStatus_t or ncclResult_t.
template <typename Status> [[noreturn]] void throw_status(const char* call, Status status, const char* file, int line);
template <typename Status> void log_status(const char* call, Status status, const char* file, int line);

}  // namespace lockstep::cuda_detail

#define LS_DETAIL_CHECK(report, type, ok, call)                                                          \
  do {                                                                                                   \
    type ls_status_ = (call);                                                                            \
    if (ls_status_ != (ok)) ::lockstep::cuda_detail::report(#call, ls_status_, __FILE__, __LINE__);      \
  } while (0)

#define LS_CUDA_CHECK(call) LS_DETAIL_CHECK(throw_status, cudaError_t, cudaSuccess, call)
#define LS_CUDNN_CHECK(call) LS_DETAIL_CHECK(throw_status, cudnnStatus_t, CUDNN_STATUS_SUCCESS, call)
#define LS_CUBLAS_CHECK(call) LS_DETAIL_CHECK(throw_status, cublasStatus_t, CUBLAS_STATUS_SUCCESS, call)
#define LS_NCCL_CHECK(call) LS_DETAIL_CHECK(throw_status, ncclResult_t, ncclSuccess, call)

#define LS_CUDA_LOG(call) LS_DETAIL_CHECK(log_status, cudaError_t, cudaSuccess, call)
#define LS_CUDNN_LOG(call) LS_DETAIL_CHECK(log_status, cudnnStatus_t, CUDNN_STATUS_SUCCESS, call)
#define LS_CUBLAS_LOG(call) LS_DETAIL_CHECK(log_status, cublasStatus_t, CUBLAS_STATUS_SUCCESS, call)
#define LS_NCCL_LOG(call) LS_DETAIL_CHECK(log_status, ncclResult_t, ncclSuccess, call)

// After a kernel launch: a bad configuration (grid, shared memory, no device)
// shows up only in cudaGetLastError; the message names the kernel.
#define LS_CUDA_CHECK_LAUNCH(kernel_name)                                                              \
  do {                                                                                                 \
    cudaError_t ls_status_ = cudaGetLastError();                                                       \
    if (ls_status_ != cudaSuccess)                                                                     \
      ::lockstep::cuda_detail::throw_status("launch of " kernel_name, ls_status_, __FILE__, __LINE__);   \
  } while (0)
