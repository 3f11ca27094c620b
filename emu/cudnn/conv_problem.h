#pragma once
// One convolution call's problem, checked: the descriptors resolved into the
// ConvGeometry, the algorithms the stand-in emulates with
// their workspace needs, and the queueing of one run on the handle's stream.
#include <cstddef>
#include <memory>

#include "emu/cudnn/internal.h"
#include "kernels/conv_geometry.h"

namespace lockstep::emu::cudnn {

enum class Direction { forward, backward_data, backward_filter };

struct DirectConv;
// The stand-in's own arithmetic's view of a checked geometry (direct_math.h).
DirectConv direct(const ConvGeometry& g);

struct ConvProblem {
  Direction direction = Direction::forward;
  ConvGeometry g;
  cudnnTensorStruct x, y, w;  // input, output, filter (the filter as a strided tensor)
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

// Checks the descriptors as cuDNN does (BAD_PARAM for inconsistent shapes,
// NOT_SUPPORTED for what the stand-in does not compute) and fills `out`.
cudnnStatus_t resolve(Direction direction, const char* call, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                      cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, ConvProblem& out);

struct Algorithm {
  int algo;
  bool emulated;
  bool uses_workspace;  // GEMM-style: the column buffer lives in the caller's workspace
  cudnnDeterminism_t determinism;
};
// Every algorithm of the direction's enum, emulated ones first.
const Algorithm* algorithms(Direction d, int* count);
// The algorithm `algo` names; BAD_PARAM for a value outside the enum,
// NOT_SUPPORTED for one the stand-in does not emulate.
cudnnStatus_t find_algorithm(Direction d, int algo, const char* call, const Algorithm** out);
size_t workspace_bytes(const Algorithm& a, const ConvProblem& p);

struct ConvPointers {
  const void* in_a = nullptr;  // x (forward, backward filter) or w (backward data)
  const void* in_b = nullptr;  // w (forward) or dy (backward data, backward filter)
  void* out = nullptr;         // y, dx or dw
};

// Checks pointers, workspace and handle, then queues the computation
// out = alpha * op(in_a, in_b) + beta * out on the handle's stream. When
// `elapsed_ms` is given the worker stores the run's duration there.
cudnnStatus_t run(cudnnHandle_t handle, const char* call, const ConvProblem& p, const Algorithm& a, float alpha,
                  float beta, const ConvPointers& ptr, void* workspace, size_t workspace_size,
                  std::shared_ptr<float> elapsed_ms = nullptr);

}  // namespace lockstep::emu::cudnn
