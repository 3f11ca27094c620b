#pragma once
// The activations' memory format as an option (ContextOptions::memory_format,
// `lockstep train --memory-format`): the names are memory_format_name's
// (kernels/memory_format.h), "nchw" and "nhwc"; and the one rule for the
// format used when none is given, which the Context, the CLI and the
// benchmarks all apply.
#include <string_view>

#include "kernels/memory_format.h"
#include "runtime/context_options.h"
#include "runtime/device.h"
#include "runtime/precision.h"

namespace lockstep {

// The format `text` names; an Error naming `what` (the option it came from)
// and the valid names otherwise.
MemoryFormat parse_memory_format(std::string_view text, std::string_view what = "memory format");

// The format used when none is given: on a CUDA device channels-last (nhwc)
// for bf16, nchw for the other precisions; bf16 follows PyTorch AMP with
// channels_last and NVIDIA's guidance for tensor cores (cuDNN's documentation:
// it may transpose NCHW tensors to NHWC to reach its tensor-core
// convolutions, a cost channels-last saves). On the CPU, in every precision,
// nhwc where its convolutions run on oneDNN (runtime/cpu_convolution.h),
// whose channels-last kernels take the images as they are where NCHW ones
// are reordered to a blocked layout and back at every call (a resnet20 step
// at batch 64: 150 ms against 170 on one thread of a Xeon with AVX-512);
// nchw on the im2col reference, which computes on NCHW.
MemoryFormat default_memory_format(Precision precision, Device device);

// The format a Context on `device` with `options` lays its activations out
// in: options.memory_format when given, default_memory_format otherwise.
MemoryFormat resolve_memory_format(const ContextOptions& options, Device device);

}  // namespace lockstep
