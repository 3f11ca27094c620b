// The batch slice against the formula docs/architecture.md gives ("The
// step", 2.), for many batch sizes and replica counts:
//   [r q + min(r, m), (r + 1) q + min(r + 1, m))
// with q = B / N rounded down and m = B mod N. tests/build/test_source_rules.py
// checks that the page still gives this formula.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>

#include "distributed/batch_split.h"

using namespace lockstep;

namespace {

// The start of replica r's slice as the page writes it.
int64_t documented_start(int64_t batch, int64_t replicas, int64_t r) {
  const int64_t q = batch / replicas, m = batch % replicas;
  return r * q + std::min(r, m);
}

}  // namespace

TEST_CASE("batch split: every replica's slice is the one docs/architecture.md gives", "[batch_split]") {
  for (int64_t batch = 0; batch <= 300; ++batch) {
    for (int replicas = 1; replicas <= 24; ++replicas) {
      int64_t next = 0;
      for (int r = 0; r < replicas; ++r) {
        const Slice slice = replica_slice(batch, replicas, r);
        INFO("B=" << batch << " N=" << replicas << " r=" << r);
        REQUIRE(slice.offset == documented_start(batch, replicas, r));
        REQUIRE(slice.offset + slice.count == documented_start(batch, replicas, r + 1));
        REQUIRE(slice.offset == next);  // consecutive, in rank order
        next = slice.offset + slice.count;
      }
      REQUIRE(next == batch);  // every sample once
    }
  }
}

TEST_CASE("batch split: 10 over 4 replicas is 3, 3, 2, 2, as the page's example", "[batch_split]") {
  const int64_t counts[] = {3, 3, 2, 2};
  for (int r = 0; r < 4; ++r) REQUIRE(replica_slice(10, 4, r).count == counts[r]);
}
