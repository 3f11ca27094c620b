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

// The format used when none is given: channels-last (nhwc) for bf16 on a
// CUDA device, nchw for every other precision and on the CPU. bf16 on a GPU follows PyTorch AMP with channels_last and NVIDIA's guidance
// for tensor cores (cuDNN's documentation: it may transpose NCHW tensors to
// NHWC to reach its tensor-core convolutions, a cost channels-last saves).
// The CPU computes NHWC on NCHW copies, so it keeps nchw in every precision.
MemoryFormat default_memory_format(Precision precision, Device device);

// The format a Context on `device` with `options` lays its activations out
// in: options.memory_format when given, default_memory_format otherwise.
MemoryFormat resolve_memory_format(const ContextOptions& options, Device device);

}  // namespace lockstep
