#pragma once
// The streams of every context on each GPU (a CudaState's compute,
// communication and copy streams), in one registry for the two places that
// must wait for "everything queued on this device so far":
//   - the synchronous copies (runtime/cuda/cuda_memory.h) order their copy
//     stream after these streams through events, holding the registry's lock
//     (an event record or stream wait never blocks the host);
//   - the allocator's out-of-memory retry (runtime/cuda/cuda_allocator.h)
//     synchronises them before it gives memory back, and must not hold any
//     lock while it does (a peer's collective on one of these streams may
//     need a lock to launch). It borrows a copy of the list instead, and
//     unregistering waits until no borrowed copy is left, so a stream is
//     never destroyed while a retry is still waiting for it.
#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

namespace lockstep {

// A context's streams on GPU `device`: registered when made, unregistered
// before they are destroyed (which then waits for any borrowed copy).
void register_context_streams(int device, const std::vector<cudaStream_t>& streams);
void unregister_context_streams(int device, const std::vector<cudaStream_t>& streams);

// Calls `fn` on each of `device`'s registered streams with the registry's
// lock held: for calls that do not block (event records, stream waits).
void for_each_context_stream(int device, const std::function<void(cudaStream_t)>& fn);

// The registered streams of one device, copied out for a blocking wait made
// with no lock held; none of them is destroyed while this object lives.
class BorrowedContextStreams {
public:
  explicit BorrowedContextStreams(int device);
  ~BorrowedContextStreams();
  BorrowedContextStreams(const BorrowedContextStreams&) = delete;
  BorrowedContextStreams& operator=(const BorrowedContextStreams&) = delete;

  const std::vector<cudaStream_t>& streams() const { return streams_; }

private:
  int device_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace lockstep
