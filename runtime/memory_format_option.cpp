#include "runtime/memory_format_option.h"

#include "runtime/cpu_convolution.h"
#include "runtime/named_value.h"

namespace lockstep {

MemoryFormat parse_memory_format(std::string_view text, std::string_view what) {
  return parse_named_value(text, what, {MemoryFormat::nchw, MemoryFormat::nhwc}, memory_format_name);
}

MemoryFormat default_memory_format(Precision precision, Device device) {
  if (device.is_cuda()) return precision == Precision::bf16 ? MemoryFormat::nhwc : MemoryFormat::nchw;
  return cpu_conv_on_dnnl() ? MemoryFormat::nhwc : MemoryFormat::nchw;
}

MemoryFormat resolve_memory_format(const ContextOptions& options, Device device) {
  return options.memory_format ? *options.memory_format : default_memory_format(options.precision, device);
}

}  // namespace lockstep
