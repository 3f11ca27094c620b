#pragma once
// CommunicatorGroup: one rank's view of a communicator as the ReplicaGroup a
// layer reaches through its context (runtime/replica_group.h): a sum of
// doubles, ordered before the later work of the compute stream.
#include "distributed/communicator.h"
#include "runtime/replica_group.h"

namespace lockstep {

class CommunicatorGroup final : public ReplicaGroup {
public:
  CommunicatorGroup(Communicator& comm, int rank) : comm_(comm), rank_(rank) {}
  int size() const override { return comm_.size(); }
  void all_reduce_sum(Context& ctx, double* data, int64_t count) override {
    comm_.all_reduce_sum(rank_, ctx, data, count);
    comm_.wait(rank_, ctx);
  }

private:
  Communicator& comm_;
  int rank_;
};

}  // namespace lockstep
