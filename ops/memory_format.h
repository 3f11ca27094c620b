#pragma once
// Converting image tensors between memory formats (kernels/memory_format.h):
// NCHW <-> NHWC, the same logical [N, C, H, W] either way, on ctx's device
// and stream (the CPU twin kernels/cpu/transpose_cpu.h, the CUDA twin
// kernels/cuda/transpose_cuda.h).
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// dst = src with dst's memory format: src and dst [N, C, H, W] of one shape,
// separate buffers, on ctx's device, both f32 or (on a GPU) both bf16.
// Same formats: a plain copy.
void convert_format(Context& ctx, const Tensor& src, Tensor& dst);
// A new tensor on ctx's device holding src in `format` (src's dtype).
Tensor to_format(Context& ctx, const Tensor& src, MemoryFormat format);

}  // namespace lockstep::ops
