#pragma once
// Marks functions that are compiled for both the CPU reference loops and the
// CUDA kernels, so each piece of element-wise math is written once.
#if defined(__CUDACC__)
#define LS_HD __host__ __device__ __forceinline__
#else
#define LS_HD inline
#endif
