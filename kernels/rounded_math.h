#pragma once
// Additions, subtractions, multiplications and divisions rounded one at a
// time, in float and double, for maths whose CPU and CUDA results must agree
// bit for bit. nvcc contracts a * b + c into one fused multiply-add by
// default, which rounds once instead of twice; its _rn intrinsics are never
// contracted. The host compiler targets baseline x86-64, which has no FMA
// instruction, so plain operators round every step there.
#include "kernels/host_device.h"

namespace lockstep {

#if defined(__CUDA_ARCH__)
LS_HD float add_rn(float a, float b) { return __fadd_rn(a, b); }
LS_HD float sub_rn(float a, float b) { return __fsub_rn(a, b); }
LS_HD float mul_rn(float a, float b) { return __fmul_rn(a, b); }
LS_HD float div_rn(float a, float b) { return __fdiv_rn(a, b); }
LS_HD double add_rn(double a, double b) { return __dadd_rn(a, b); }
LS_HD double sub_rn(double a, double b) { return __dsub_rn(a, b); }
LS_HD double mul_rn(double a, double b) { return __dmul_rn(a, b); }
LS_HD double div_rn(double a, double b) { return __ddiv_rn(a, b); }
#else
LS_HD float add_rn(float a, float b) { return a + b; }
LS_HD float sub_rn(float a, float b) { return a - b; }
LS_HD float mul_rn(float a, float b) { return a * b; }
LS_HD float div_rn(float a, float b) { return a / b; }
LS_HD double add_rn(double a, double b) { return a + b; }
LS_HD double sub_rn(double a, double b) { return a - b; }
LS_HD double mul_rn(double a, double b) { return a * b; }
LS_HD double div_rn(double a, double b) { return a / b; }
#endif

}  // namespace lockstep
