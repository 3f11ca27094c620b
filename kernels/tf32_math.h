#pragma once
// TF32: FP32's 8-bit exponent with 10 explicit mantissa bits, the operand
// format of tensor-core FP32 convolutions and GEMMs (precision tf32 on a
// GPU). The emulated cuDNN and cuBLAS round their operands with this when
// the math type allows TF32, so a test sees the mode reach the libraries;
// the real libraries' rounding of operands is not documented (the PTX
// conversion cvt.rna rounds ties away from zero), so the emulator's results
// match a GPU's within TF32's precision, not bit for bit.
#include <cstdint>

#include "kernels/float_bits.h"
#include "kernels/host_device.h"

namespace lockstep {

// x rounded to TF32 (to nearest, ties to even), returned as a float.
LS_HD float round_to_tf32(float x) { return bits_float(round_mantissa_bits(float_bits(x), 13)); }

}  // namespace lockstep
