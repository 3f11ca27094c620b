#include "distributed/gradient_buckets.h"

#include <algorithm>

namespace lockstep {

std::vector<Bucket> make_gradient_buckets(const ParameterArenas& arenas, size_t bucket_bytes,
                                          size_t first_bucket_bytes) {
  std::vector<Bucket> buckets;
  const auto& entries = arenas.entries();
  const auto elements = [](size_t bytes) { return std::max<int64_t>(1, static_cast<int64_t>(bytes / sizeof(float))); };
  const int64_t bucket_elements = elements(bucket_bytes);
  const int64_t first_elements = std::min(bucket_elements, elements(first_bucket_bytes));
  int64_t end = arenas.total();
  for (size_t i = entries.size(); i-- > 0;) {
    int64_t begin = entries[i].offset;
    if (end - begin >= (buckets.empty() ? first_elements : bucket_elements) || i == 0) {
      buckets.push_back({begin, end});
      end = begin;
    }
  }
  return buckets;
}

}  // namespace lockstep
