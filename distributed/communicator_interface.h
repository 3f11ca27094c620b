#pragma once
// What every communicator does (distributed/communicator.h lists them and
// makes the one that fits the devices), apart from that factory so that the
// communicators include this and the factory includes them, one way.
#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/context.h"

namespace lockstep {

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  // Sums `count` floats at `data` over all ranks, in place, on every rank. On
  // a GPU the sum may still be in flight when this returns: wait() orders it
  // before later work on the compute stream.
  virtual void all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) = 0;
  // The same for doubles (statistics that need more than float precision,
  // counts exact beyond 2^24).
  virtual void all_reduce_sum(int rank, Context& ctx, double* data, int64_t count) = 0;
  // Makes later work on `ctx`'s compute stream wait for this rank's collectives.
  virtual void wait(int rank, Context& ctx) = 0;
  // Releases every rank blocked in (or later entering) a collective with an
  // Error that carries `reason`. The communicator stays unusable afterwards.
  virtual void abort(const std::string& reason) = 0;
};

// Time a rank waits at a collective before it is declared hung.
inline constexpr std::chrono::seconds default_collective_timeout{300};

}  // namespace lockstep
