#pragma once
// Softmax cross-entropy on the GPU: the same result as the CPU reference
// (kernels/cpu/loss_cpu.h), from the same math (kernels/loss_math.h).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/loss_math.h"

namespace lockstep::cuda {

// Where the loss pass reduces and reads back: `device` bytes on the GPU and
// `host` pinned bytes, used by one pass at a time (it waits before returning).
struct LossScratch {
  void* device = nullptr;
  size_t device_bytes = 0;
  void* host = nullptr;
  size_t host_bytes = 0;
};

// One warp per row, on `stream` (its device current on the calling thread). The loss sum (in double, in a
// fixed order, so the same inputs give the same bits) and the correct count
// are reduced on the device and read back, so this waits for the stream.
// Writes scale * dLoss/dlogits into `grad` when it is not null. A label
// outside [0, classes) raises an Error naming the first such sample. T, the
// stored type of the logits and their gradient: float or bf16_bits
// (kernels/stored_type.h); the loss is summed in double either way.
// `smoothing`: label smoothing (kernels/loss_math.h), 0 for none. `mixed`:
// `labels` holds rows of (a, b, lam bits), kernels/loss_math.h's mixed
// targets, as the CPU reference's.
template <typename T>
LossSums softmax_cross_entropy(cudaStream_t stream, const LossScratch& scratch, const T* logits,
                               const int32_t* labels, int64_t rows, int classes, float scale, T* grad,
                               float smoothing = 0.0f, bool mixed = false);

// What the loss pass leaves on the device: the sums, and the smallest row
// whose label is outside [0, classes) (kNoBadRow when none is).
struct LossResult {
  double loss_sum;
  unsigned long long correct;
  unsigned long long bad_row;
};
inline constexpr unsigned long long kNoBadRow = ~0ull;
inline constexpr size_t kLossResultBytes = sizeof(LossResult);

// The same pass without waiting (a training step's): the sums go to `result`
// on the device, then are copied on `stream` to `host_result`, pinned host
// memory, which holds them once the stream has passed this point. Only the
// first `scratch.device_bytes` are used for partial sums (no host scratch).
template <typename T>
void softmax_cross_entropy_queued(cudaStream_t stream, const LossScratch& scratch, const T* logits,
                                  const int32_t* labels, int64_t rows, int classes, float scale, T* grad,
                                  LossResult* result, LossResult* host_result, float smoothing = 0.0f,
                                  bool mixed = false);

// The sums of a read-back result. A bad row raises an Error naming the
// sample and its label (read from `labels` on the device through `stream`,
// the stream that wrote the result, and waited for: only on that error).
LossSums loss_sums_of(cudaStream_t stream, const LossResult& host_result, const int32_t* labels, int classes,
                      bool mixed = false);

}  // namespace lockstep::cuda
