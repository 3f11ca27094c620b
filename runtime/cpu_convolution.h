#pragma once
// Which convolution the CPU runs: oneDNN's (kernels/cpu/dnnl) where the build
// has it, unless LOCKSTEP_CPU_CONV=im2col asks for the im2col + OpenBLAS
// reference (kernels/cpu/conv_cpu.h), to compare or measure. The ops run the
// one it names, and the default memory format follows it
// (runtime/memory_format_option.h): oneDNN takes channels-last images as
// they are, the reference computes on NCHW.

namespace lockstep {

// Read once; an Error naming the variable when it holds neither name.
bool cpu_conv_on_dnnl();

}  // namespace lockstep
