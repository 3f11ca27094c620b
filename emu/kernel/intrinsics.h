#pragma once
// Device intrinsics over the emulated thread: barriers and warp collectives
// (fiber_block.cpp), atomics over std::atomic_ref (blocks of different streams
// run on different OS threads), and the math and bit-cast functions kernels use.
#include "thread_state.h"

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

namespace lockstep::emu::kernel {
template <class T>
uint64_t to_bits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "warp intrinsics move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T>
T from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}
}  // namespace lockstep::emu::kernel

inline void __syncthreads(std::source_location where = std::source_location::current()) {
  ::lockstep::emu::kernel::syncthreads(where);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location where = std::source_location::current()) {
  ::lockstep::emu::kernel::warp_collective(::lockstep::emu::kernel::WarpOp::syncwarp, mask, 0, 0, 32, where);
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

#define LS_EMU_SHFL(name, op)                                                                                   \
  template <class T>                                                                                            \
  T name(unsigned mask, T var, decltype(0) arg, int width = 32,                                                 \
         std::source_location where = std::source_location::current()) {                                       \
    namespace k = ::lockstep::emu::kernel;                                                                      \
    return k::from_bits<T>(k::warp_collective(k::WarpOp::op, mask, k::to_bits(var), static_cast<int>(arg), width, \
                                              where));                                                          \
  }
LS_EMU_SHFL(__shfl_sync, shfl)
LS_EMU_SHFL(__shfl_up_sync, shfl_up)
LS_EMU_SHFL(__shfl_down_sync, shfl_down)
LS_EMU_SHFL(__shfl_xor_sync, shfl_xor)
#undef LS_EMU_SHFL

inline unsigned __ballot_sync(unsigned mask, int pred, std::source_location where = std::source_location::current()) {
  namespace k = ::lockstep::emu::kernel;
  return static_cast<unsigned>(k::warp_collective(k::WarpOp::ballot, mask, pred != 0, 0, 32, where));
}
inline int __any_sync(unsigned mask, int pred, std::source_location where = std::source_location::current()) {
  namespace k = ::lockstep::emu::kernel;
  return static_cast<int>(k::warp_collective(k::WarpOp::any, mask, pred != 0, 0, 32, where));
}
inline int __all_sync(unsigned mask, int pred, std::source_location where = std::source_location::current()) {
  namespace k = ::lockstep::emu::kernel;
  return static_cast<int>(k::warp_collective(k::WarpOp::all, mask, pred != 0, 0, 32, where));
}
inline unsigned __activemask() { return 0xffffffffu; }  // lanes run converged between intrinsics here

// Atomics: return the old value, as CUDA's do.
template <class T>
T atomicAdd(T* address, T val) {
  static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned> || std::is_same_v<T, unsigned long long> ||
                    std::is_same_v<T, float> || std::is_same_v<T, double>,
                "atomicAdd: int, unsigned, unsigned long long, float or double");
  return std::atomic_ref<T>(*address).fetch_add(val);
}
template <class T>
T atomicSub(T* address, T val) {
  static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned>, "atomicSub: int or unsigned");
  return std::atomic_ref<T>(*address).fetch_sub(val);
}
template <class T>
T atomicExch(T* address, T val) {
  return std::atomic_ref<T>(*address).exchange(val);
}
template <class T>
T atomicCAS(T* address, T compare, T val) {
  static_assert(std::is_integral_v<T>, "atomicCAS: an integer type (CUDA has no float CAS)");
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, val);
  return compare;  // holds the old value either way
}
template <class T>
T atomicMin(T* address, T val) {
  static_assert(std::is_integral_v<T>, "atomicMin: an integer type");
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (val < old && !a.compare_exchange_weak(old, val)) {
  }
  return old;
}
template <class T>
T atomicMax(T* address, T val) {
  static_assert(std::is_integral_v<T>, "atomicMax: an integer type");
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (val > old && !a.compare_exchange_weak(old, val)) {
  }
  return old;
}
template <class T>
T atomicAnd(T* address, T val) {
  return std::atomic_ref<T>(*address).fetch_and(val);
}
template <class T>
T atomicOr(T* address, T val) {
  return std::atomic_ref<T>(*address).fetch_or(val);
}
template <class T>
T atomicXor(T* address, T val) {
  return std::atomic_ref<T>(*address).fetch_xor(val);
}

// Math: the fast-math intrinsics are the precise functions here (results
// differ from nvcc's in the last bits: compare at a relative tolerance).
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
template <class T>
T __ldg(const T* p) {
  return *p;
}
