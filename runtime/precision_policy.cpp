#include "runtime/precision_policy.h"

namespace lockstep {

PrecisionPolicy precision_policy(Precision precision, Device device) {
  PrecisionPolicy p;
  p.precision = precision;
  const bool gpu = device.is_cuda();
  p.tf32_math = gpu && precision == Precision::tf32;
  p.bf16 = precision == Precision::bf16;
  p.activations = p.bf16 && gpu ? DType::bf16 : DType::f32;
  p.bf16_operands = p.bf16 && gpu;
  p.rounds_in_f32 = p.bf16 && !gpu;
  return p;
}

}  // namespace lockstep
