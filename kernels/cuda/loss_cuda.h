#pragma once
// Softmax cross-entropy on the GPU: the same result as the CPU reference
// (kernels/cpu/loss_cpu.h), from the same math (kernels/loss_math.h).
#include <cstdint>

#include "kernels/cpu/loss_cpu.h"

namespace lockstep {
struct CudaState;
}

namespace lockstep::cuda {

// One warp per row, on state's compute stream. The loss sum (in double, in a
// fixed order, so the same inputs give the same bits) and the correct count
// are reduced on the device and read back, so this waits for the stream.
// Writes scale * dLoss/dlogits into `grad` when it is not null. A label
// outside [0, classes) raises an Error naming the first such sample.
cpu::LossSums softmax_cross_entropy(CudaState& state, const float* logits, const int32_t* labels, int64_t rows,
                                    int classes, float scale, float* grad);

}  // namespace lockstep::cuda
