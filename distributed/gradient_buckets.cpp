#include "distributed/gradient_buckets.h"

namespace lockstep {

std::vector<Bucket> make_gradient_buckets(const ParameterArenas& arenas, size_t bucket_bytes) {
  std::vector<Bucket> buckets;
  const auto& entries = arenas.entries();
  int64_t bucket_elements = std::max<int64_t>(1, static_cast<int64_t>(bucket_bytes / sizeof(float)));
  int64_t end = arenas.total();
  for (size_t i = entries.size(); i-- > 0;) {
    int64_t begin = entries[i].offset;
    if (end - begin >= bucket_elements || i == 0) {
      buckets.push_back({begin, end});
      end = begin;
    }
  }
  return buckets;
}

}  // namespace lockstep
