#pragma once
// How a kernel reads and writes an activation whatever it is stored as:
// FP32 (float) or bf16 (bf16_bits, the raw bits; kernels/bf16_math.h).
// Math is always in float: load widens (exactly), store rounds to nearest,
// ties to even. The hand-written kernels are templates on the stored type T,
// instantiated for float and bf16_bits, and touch activations only through
// these, so one kernel serves both precisions (PyTorch AMP's split: bf16
// storage, FP32 math and accumulation).
#include <cstdint>

#include "kernels/bf16_math.h"
#include "kernels/host_device.h"

namespace lockstep {

LS_HD float load(const float* p, int64_t i) { return p[i]; }
LS_HD float load(const bf16_bits* p, int64_t i) { return bf16_to_float(p[i]); }

LS_HD void store(float* p, int64_t i, float value) { p[i] = value; }
LS_HD void store(bf16_bits* p, int64_t i, float value) { p[i] = float_to_bf16(value); }

}  // namespace lockstep
