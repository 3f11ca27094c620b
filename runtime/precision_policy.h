#pragma once
// PrecisionPolicy: what a precision (runtime/precision.h) means on one kind
// of device, decided here once; the Context holds its replica's
// (Context::precision_policy) and every layer and op asks it, never the
// precision itself.
#include "runtime/device.h"
#include "runtime/precision.h"
#include "runtime/tensor.h"

namespace lockstep {

struct PrecisionPolicy {
  Precision precision = Precision::tf32;
  // cuDNN and cuBLAS may run FP32 convolutions and GEMMs on TF32 tensor
  // cores (tf32 on a GPU; the CPU computes tf32 in FP32).
  bool tf32_math = false;
  // bf16 mixed precision: the layers compute with bf16 copies of their
  // weights and biases (ParameterArenas::params_bf16), the input is rounded
  // to bf16 as AMP casts it, and so is every activation and activation
  // gradient a GPU stores in bf16.
  bool bf16 = false;
  // How activations and their gradients are stored: bf16 on a GPU in bf16,
  // FP32 otherwise.
  DType activations = DType::f32;
  // Convolutions and linear layers take the bf16 copies as operands (a GPU:
  // cuDNN and cuBLAS read bf16); on the CPU they take FP32 copies widened
  // from them.
  bool bf16_operands = false;
  // The CPU's bf16 reference: values a GPU stores in bf16 are rounded to
  // bf16 in FP32 storage where the GPU would store them.
  bool rounds_in_f32 = false;
};

PrecisionPolicy precision_policy(Precision precision, Device device);

}  // namespace lockstep
