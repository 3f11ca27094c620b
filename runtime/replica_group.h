#pragma once
// ReplicaGroup: the replicas of a step as a layer sees them, through its
// Context (Context::replica_group): sums of doubles over every replica, in
// order with the context's compute stream. The replica manager installs one
// per replica; synchronised batch norm (--sync-bn) is its user. Every replica
// must make the same calls in the same order.
#include <cstdint>

namespace lockstep {

class Context;

class ReplicaGroup {
public:
  virtual ~ReplicaGroup() = default;
  virtual int size() const = 0;
  // Sums `count` doubles at `data` (on ctx's device) over all replicas, in
  // place; work queued on ctx's compute stream afterwards sees the sums.
  virtual void all_reduce_sum(Context& ctx, double* data, int64_t count) = 0;
};

}  // namespace lockstep
