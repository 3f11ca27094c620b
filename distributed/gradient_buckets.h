#pragma once
// Cuts the gradient arena into all-reduce buckets in reverse parameter order
// (the order backward finishes them). Bucket boundaries fall on parameter
// starts, so a bucket is complete as soon as backward reports everything from
// its first offset onwards as ready.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/arena.h"

namespace lockstep {

struct Bucket {
  int64_t begin = 0, end = 0;  // element range in the gradient arena
};

// Buckets of at least `bucket_bytes` (except the last), the highest offsets
// first; the first of them closes already at `first_bucket_bytes` (when that
// is smaller), so that its all-reduce starts early in backward, as soon as the
// last layers' gradients are done, instead of after a full bucket's worth
// (PyTorch DDP's small first bucket). Every element lies in exactly one
// bucket; together they cover the arena.
std::vector<Bucket> make_gradient_buckets(const ParameterArenas& arenas, size_t bucket_bytes,
                                          size_t first_bucket_bytes = SIZE_MAX);

}  // namespace lockstep
