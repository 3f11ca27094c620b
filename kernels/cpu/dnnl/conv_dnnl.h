#pragma once
// The CPU convolution on oneDNN (Debian's libdnnl), the library PyTorch's CPU
// convolutions run on. Its direct kernels work on channel-blocked layouts
// (nChw16c on AVX-512, nChw8c on AVX2); NCHW images are reordered into the
// layout oneDNN chose for the geometry and the result back, through three
// buffers the calling thread keeps for all geometries (measured on 2 cores:
// im2col + OpenBLAS spent about 65% of a resnet20 step; oneDNN's kernels take
// half of that time with the reorders counted). NHWC images (`format`) go to
// oneDNN's channels-last kernels as they are, with no reorder: the
// convolutions of a resnet20 step at batch 64 took 85 ms that way against
// 110 ms through the reorders (one thread, a Xeon with AVX-512). Filters are
// [O, C, K, K] either way, reordered per call (they are small).
//
// Same contract and (in NCHW) layouts as the im2col reference in conv_cpu.h, which stays
// the reference the tests hold this one against. Each calling thread keeps its
// own primitives (per geometry) and buffers (a replica thread, a test). oneDNN runs its
// parallel loops on its OpenMP threads, compute_threads() of them, fixed so a
// result never depends on which other thread was busy.
//
// Built only when CMake finds oneDNN (LOCKSTEP_WITH_DNNL); the ThreadSanitizer
// build leaves it out (libgomp's barriers are not instrumented).
#include "kernels/conv_geometry.h"
#include "kernels/memory_format.h"

namespace lockstep::cpu {

// y = conv(x, w) + bias (bias may be null).
void dnnl_conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y,
                         MemoryFormat format = MemoryFormat::nchw);
// dx = (or +=, when accumulate) the gradient of the input.
void dnnl_conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx, bool accumulate,
                               MemoryFormat format = MemoryFormat::nchw);
// dw = the gradient of the weights (written).
void dnnl_conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                                 MemoryFormat format = MemoryFormat::nchw);

// Geometries whose primitives the calling thread keeps.
int dnnl_cached_geometries();

}  // namespace lockstep::cpu
