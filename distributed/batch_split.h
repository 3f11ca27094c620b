#pragma once
// How a global batch of B samples is cut over N replicas: replica r gets
// B/N samples, plus one when r < B%N (the remainder goes to the first
// replicas), as consecutive samples. Its loss weight is n_r / B.
#include <cstdint>
#include <vector>

namespace lockstep {

struct Slice {
  int64_t offset = 0;  // first sample of the global batch
  int64_t count = 0;
};

inline Slice replica_slice(int64_t batch, int replicas, int rank) {
  int64_t base = batch / replicas, extra = batch % replicas;
  int64_t count = base + (rank < extra ? 1 : 0);
  int64_t offset = rank * base + (rank < extra ? rank : extra);
  return {offset, count};
}

}  // namespace lockstep
