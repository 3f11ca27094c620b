#pragma once
// Moving tensors between the strided layout a descriptor gives and the packed
// NCHW layout the stand-in computes in. Strides are used exactly as
// given, so a descriptor with a wrong stride reads and writes the wrong
// elements, as it would on a GPU.
#include <cstddef>

#include "emu/cudnn/internal.h"

namespace lockstep::emu::cudnn {

// packed[n][c][h][w] = src[n*ns + c*cs + h*hs + w*ws], src of t's data type
// (float, or bf16 widened exactly).
void gather(const cudnnTensorStruct& t, const void* src, float* packed);

// dst = alpha * packed + beta * dst over the strided layout, computed in
// float and, for a bf16 dst, rounded to nearest even once when stored; with
// beta == 0 dst is written without being read (NaN or garbage there does not
// leak in), as cuDNN documents for its blending scalars.
void blend(const cudnnTensorStruct& t, const float* packed, float alpha, float beta, void* dst);

// True when two elements of the tensor share an address (an output written
// through such a layout would race on a GPU).
bool self_overlapping(const cudnnTensorStruct& t);

// True when [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool ranges_overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes);

// A filter descriptor as a tensor: its format gives the strides.
cudnnTensorStruct filter_as_tensor(const cudnnFilterStruct& f);

}  // namespace lockstep::emu::cudnn
