#include "runtime/cuda/context_streams.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "runtime/cuda/per_device.h"

namespace lockstep {

namespace {

struct DeviceStreams {
  std::mutex m;
  std::condition_variable no_borrowers;
  std::vector<cudaStream_t> streams;
  int borrowers = 0;
};

DeviceStreams& streams_of(int device) { return per_device<DeviceStreams>(device); }

}  // namespace

void register_context_streams(int device, const std::vector<cudaStream_t>& streams) {
  DeviceStreams& d = streams_of(device);
  std::lock_guard<std::mutex> lock(d.m);
  for (cudaStream_t s : streams)
    if (s) d.streams.push_back(s);
}

void unregister_context_streams(int device, const std::vector<cudaStream_t>& streams) {
  DeviceStreams& d = streams_of(device);
  std::unique_lock<std::mutex> lock(d.m);
  d.no_borrowers.wait(lock, [&] { return d.borrowers == 0; });
  for (cudaStream_t s : streams) {
    auto it = std::find(d.streams.begin(), d.streams.end(), s);
    if (it != d.streams.end()) d.streams.erase(it);
  }
}

void for_each_context_stream(int device, const std::function<void(cudaStream_t)>& fn) {
  DeviceStreams& d = streams_of(device);
  std::lock_guard<std::mutex> lock(d.m);
  for (cudaStream_t s : d.streams) fn(s);
}

BorrowedContextStreams::BorrowedContextStreams(int device) : device_(device) {
  DeviceStreams& d = streams_of(device);
  std::lock_guard<std::mutex> lock(d.m);
  streams_ = d.streams;
  ++d.borrowers;
}

BorrowedContextStreams::~BorrowedContextStreams() {
  DeviceStreams& d = streams_of(device_);
  std::lock_guard<std::mutex> lock(d.m);
  if (--d.borrowers == 0) d.no_borrowers.notify_all();
}

}  // namespace lockstep
