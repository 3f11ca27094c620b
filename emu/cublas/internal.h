#pragma once
// The object behind cuBLAS's opaque handle (struct cublasContext), shared by
// the emulated cuBLAS's files.
#include <cublas_v2.h>

#include <cstddef>

struct cublasContext {
  int device = 0;                 // current at cublasCreate
  cudaStream_t stream = nullptr;  // nullptr = the legacy default stream
  void* workspace = nullptr;      // cublasSetWorkspace; cuBLAS may scribble on it
  size_t workspace_bytes = 0;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace lockstep::emu::cublas {

// The handle is usable now: its device is current and its stream and
// workspace belong to that device. Prints why not to stderr (cuBLAS has no
// last-error string) and returns the status.
cublasStatus_t check_handle(cublasHandle_t handle, const char* call);
cublasStatus_t report(cublasStatus_t status, const char* call, const char* why);

}  // namespace lockstep::emu::cublas
