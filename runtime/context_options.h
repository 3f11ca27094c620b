#pragma once
// ContextOptions: how a Context (runtime/context.h) computes on its device,
// apart from the Context so that what only reads the options
// (runtime/memory_format_option.h, the CUDA half's context_cuda.h) includes
// this and not the Context.
#include <cstddef>
#include <optional>

#include "kernels/memory_format.h"
#include "runtime/precision.h"

namespace lockstep {

struct ContextOptions {
  size_t workspace_limit_bytes = size_t(512) << 20;  // upper bound for conv workspaces
  // cuDNN's deterministic algorithms only, each the heuristics' choice for
  // its shape rather than the fastest by timing: two contexts built alike
  // then pick the same algorithms and compute the same bits on a real GPU.
  bool deterministic = false;
  // runtime/precision.h. tf32, the default, lets cuDNN and cuBLAS use TF32
  // tensor-core math on a GPU (PyTorch's default for convolutions) and
  // computes in FP32 on the CPU; fp32 is strict on both.
  Precision precision = Precision::tf32;
  // Drain the streams at the replica manager's phase boundaries, so phases
  // do not overlap in the times (a benchmarking aid; the times themselves
  // come from events on the compute stream either way). Adds host
  // synchronisations to every step.
  bool sync_timing = false;
  // Synchronised batch norm: a training forward normalises with the
  // statistics of all replicas (all-reduced before normalising, through the
  // context's replica group), so N replicas equal one device at any depth.
  bool sync_batch_norm = false;
  // How the graph lays out its image activations (kernels/memory_format.h):
  // nhwc converts the input images once per step and keeps every node's
  // [N, C, H, W] output and gradient channels-last (cuDNN's NHWC
  // convolutions, with a KRSC copy of each filter, on a GPU; oneDNN's on the
  // CPU). Weights, checkpoints and predictions do not depend on
  // it. Unset, the Context takes resolve_memory_format's default
  // (runtime/memory_format_option.h): nhwc for bf16 on a GPU, as PyTorch AMP
  // with channels_last and NVIDIA's tensor-core guidance lay it out, nchw for
  // the other precisions there; nhwc on the CPU where its convolutions run on
  // oneDNN, nchw on the im2col reference. Context::memory_format() is the
  // format in force. Synchronised batch norm takes either.
  std::optional<MemoryFormat> memory_format;
};

}  // namespace lockstep
