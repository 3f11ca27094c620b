#pragma once
// DeviceGuard, apart from the CudaState (cuda_context.h) so that the
// allocator, the synchronous copies and the stream-use records, which the
// state is made of, need not include the state.

namespace lockstep {

// Makes `device` current for its scope and restores the previous device.
class DeviceGuard {
public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
  int previous_ = -1;
  bool changed_ = false;
};

}  // namespace lockstep
