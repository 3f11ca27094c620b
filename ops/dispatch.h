#pragma once
// The one place an op picks its twin: the CPU reference when the context's
// device is the CPU, otherwise the CUDA twin, called with the context's
// CudaState. The CUDA twin is written inside LS_CUDA_TWIN, which a build
// without the CUDA backend compiles away; such a build refuses a GPU device
// with an Error naming the op.
//
//   dispatch(op, ctx, [&] { cpu::relu_forward(...); },
//            LS_CUDA_TWIN(gpu, { cuda::relu_forward(gpu.compute_stream, ...); }));
#include <type_traits>

#include "runtime/context.h"

#if LOCKSTEP_WITH_CUDA
#include "runtime/cuda/cuda_context.h"
#define LS_CUDA_TWIN(state, ...) [&](::lockstep::CudaState & state) __VA_ARGS__
#else
#define LS_CUDA_TWIN(state, ...) ::lockstep::ops::NoCudaTwin{}
#endif

namespace lockstep::ops {

// What LS_CUDA_TWIN leaves in a build without the CUDA backend.
struct NoCudaTwin {};

[[noreturn]] void fail_without_cuda(const char* op, const Context& ctx);

// Returns what the chosen twin returns (both return the same type).
template <typename OnCpu, typename OnCuda>
decltype(auto) dispatch(const char* op, Context& ctx, OnCpu&& on_cpu, OnCuda&& on_cuda) {
  if (ctx.device().is_cpu()) return on_cpu();
  if constexpr (std::is_same_v<std::decay_t<OnCuda>, NoCudaTwin>)
    fail_without_cuda(op, ctx);
  else
    return on_cuda(*ctx.cuda());
}

}  // namespace lockstep::ops
