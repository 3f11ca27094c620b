#pragma once
// Helpers shared by the emulator's tests.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "emu_runtime.h"

namespace emu_test {

// Sets the scheduling order (and seed) for the lifetime of the object.
struct ScopedSchedule {
  lockstep::emu::Schedule saved = lockstep::emu::schedule();
  ScopedSchedule(lockstep::emu::Schedule::Order order, uint64_t seed = 1) {
    lockstep::emu::set_schedule({order, seed});
  }
  ~ScopedSchedule() { lockstep::emu::set_schedule(saved); }
};

template <class T>
T* device_alloc(size_t n) {
  void* p = nullptr;
  if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) return nullptr;
  return static_cast<T*>(p);
}

template <class T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = device_alloc<T>(h.size());
  cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

// Clears a planted fault's sticky error so the next test starts clean.
inline void clear_fault() {
  cudaDeviceReset();
  cudaGetLastError();
}

}  // namespace emu_test
