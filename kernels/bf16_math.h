#pragma once
// bfloat16: FP32's sign and 8-bit exponent with 7 explicit mantissa bits,
// held as the raw uint16_t of its bits (the high half of a float's), so the
// CPU loops, the emulated GPU and a real GPU compute identical bits without
// depending on a compiler's or CUDA's bf16 type. Conversions round to
// nearest, ties to even, as __float2bfloat16_rn does; NaN stays NaN, a value
// past bf16's largest finite one (3.39e38) becomes infinity.
#include <cstdint>

#include "kernels/float_bits.h"
#include "kernels/host_device.h"

namespace lockstep {

using bf16_bits = uint16_t;

LS_HD bf16_bits float_to_bf16(float x) { return static_cast<bf16_bits>(round_mantissa_bits(float_bits(x), 16) >> 16); }

LS_HD float bf16_to_float(bf16_bits b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// x rounded to the nearest bf16, as a float: what storing x in bf16 and
// reading it back gives (the CPU's bf16 mode keeps such values in FP32 storage).
LS_HD float round_to_bf16(float x) { return bits_float(round_mantissa_bits(float_bits(x), 16)); }

}  // namespace lockstep
