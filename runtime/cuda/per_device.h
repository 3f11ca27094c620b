#pragma once
// One T per GPU ordinal, made on first use and never destroyed: the CUDA
// objects such state holds (streams, events) must not be destroyed at exit,
// which can run after the CUDA runtime has unloaded, and contexts may still
// reach it from static destructors. T guards its own fields.
#include <map>
#include <memory>
#include <mutex>

namespace lockstep {

template <class T>
T& per_device(int device) {
  static std::mutex registry_mutex;
  static auto* registry = new std::map<int, std::unique_ptr<T>>;
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::unique_ptr<T>& entry = (*registry)[device];
  if (!entry) entry = std::make_unique<T>();
  return *entry;
}

}  // namespace lockstep
