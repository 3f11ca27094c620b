#pragma once
// The activations' memory format as an option (ContextOptions::memory_format,
// `lockstep train --memory-format`): the names are memory_format_name's
// (kernels/memory_format.h), "nchw" and "nhwc".
#include <string_view>

#include "kernels/memory_format.h"

namespace lockstep {

// The format `text` names; an Error naming `what` (the option it came from)
// and the valid names otherwise.
MemoryFormat parse_memory_format(std::string_view text, std::string_view what = "memory format");

}  // namespace lockstep
