#pragma once
// Cuts the gradient arena into all-reduce buckets in reverse parameter order
// (the order backward finishes them). Bucket boundaries fall on parameter
// starts, so a bucket is complete as soon as backward reports everything from
// its first offset onwards as ready.
#include <cstdint>
#include <vector>

#include "runtime/arena.h"

namespace lockstep {

struct Bucket {
  int64_t begin = 0, end = 0;  // element range in the gradient arena
};

// Buckets of at least `bucket_bytes` (except the last), the highest offsets first.
std::vector<Bucket> make_gradient_buckets(const ParameterArenas& arenas, size_t bucket_bytes);

}  // namespace lockstep
