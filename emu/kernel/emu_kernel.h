#pragma once
// Force-included (-include) into every kernels/cuda/*.cu when the emulated
// build compiles it as C++ with g++ (-x c++). Makes CUDA C++ kernel code
// plain C++ running on the emulator: qualifiers become nothing, __shared__
// block-local storage, built-in variables read the current emulated thread,
// intrinsics and LS_LAUNCH go to emu/kernel.
//
// The toolkit's headers come first: their declarations use names (gridDim,
// blockDim) that are macros from here on.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "intrinsics.h"
#include "launch.h"
#include "thread_state.h"

// host_defines.h defines these as annotations for non-nvcc compilers; make
// them plainly nothing (a __device__ lambda is an ordinary lambda).
#undef __global__
#undef __device__
#undef __host__
#undef __launch_bounds__
#undef __grid_constant__
#undef __forceinline__
#undef __noinline__
#undef __shared__
#undef __constant__
#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
#define __grid_constant__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __constant__
// Blocks of a kernel run one at a time on a stream's worker thread and a
// block's threads are fibers of that thread, so a thread_local static is
// exactly one block's shared memory. It is NOT poisoned before each block (it
// persists between blocks and starts zeroed): the macro precedes the type and
// name, so it cannot register the variable, and GNU ld merges every .tbss.*
// input section into one, so a dedicated TLS section has no usable bounds.
#define __shared__ static thread_local

#define threadIdx (::lockstep::emu::kernel::t_thread->idx)
#define blockIdx (::lockstep::emu::kernel::t_block->block_idx)
#define blockDim (::lockstep::emu::kernel::t_block->block_dim)
#define gridDim (::lockstep::emu::kernel::t_block->grid_dim)
#define warpSize 32
