#pragma once
// The precision a replica computes in (ContextOptions::precision,
// `lockstep train --precision`):
//   fp32  strict: convolutions and GEMMs in plain FP32 arithmetic (cuDNN
//         CUDNN_FMA_MATH, cuBLAS CUBLAS_DEFAULT_MATH).
//   tf32  the default, PyTorch's default for convolutions: on a GPU cuDNN and
//         cuBLAS may run FP32 convolutions and GEMMs on tensor cores with
//         their operands rounded to TF32 (10 mantissa bits), accumulating in
//         FP32. On the CPU tf32 computes in FP32, as PyTorch's CPU does.
//   bf16  mixed precision as PyTorch AMP does it: convolutions and linear
//         layers take bf16 operands and accumulate in FP32; activations are
//         bf16; batch-norm statistics, the loss, softmax, master weights,
//         gradients and momentum stay FP32.
#include <string_view>

namespace lockstep {

enum class Precision { fp32, tf32, bf16 };

// "fp32", "tf32" or "bf16".
const char* precision_name(Precision precision);
// The precision `text` names; an Error naming `what` (the option it came
// from) and the three valid names otherwise.
Precision parse_precision(std::string_view text, std::string_view what = "precision");

}  // namespace lockstep
