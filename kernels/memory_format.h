#pragma once
// How the elements of a 4-D image tensor lie in memory. The shape is always
// the logical [N, C, H, W]; the format says which axis is innermost:
//   nchw  element (n, c, h, w) at ((n * C + c) * H + h) * W + w   (planes)
//   nhwc  element (n, c, h, w) at ((n * H + h) * W + w) * C + c   (channels last)
// A filter [O, C, K, K] tagged nhwc is stored [O, K, K, C] (cuDNN's NHWC
// filter format, PyTorch's channels_last weight). Named MemoryFormat, as
// PyTorch's torch.memory_format, so it does not clash with the Layout structs
// of kernels/cuda (channel_reduce.cuh). Lives in kernels/ so the launchers can
// take it; runtime/tensor.h carries it.
namespace lockstep {

enum class MemoryFormat { nchw, nhwc };

inline const char* memory_format_name(MemoryFormat f) { return f == MemoryFormat::nhwc ? "nhwc" : "nchw"; }

}  // namespace lockstep
