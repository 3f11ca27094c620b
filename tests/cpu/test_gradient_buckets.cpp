// The all-reduce buckets over the gradient arena: reverse parameter order,
// a small first bucket so communication starts early in backward, every
// gradient in exactly one bucket.
#include <catch2/catch.hpp>

#include "distributed/gradient_buckets.h"

using namespace lockstep;

namespace {

// Ten parameters of 100..1000 floats (400..4000 bytes), in that order.
ParameterArenas ten_parameters() {
  std::vector<ParamSpec> specs;
  for (int i = 1; i <= 10; ++i) specs.push_back({"p" + std::to_string(i), Shape{100 * i}});
  return ParameterArenas(specs, Device::cpu(), false);
}

// The buckets tile the arena from its end down to 0, each boundary at a
// parameter's start, so every parameter lies in exactly one bucket.
void require_tiling(const ParameterArenas& arenas, const std::vector<Bucket>& buckets) {
  REQUIRE(!buckets.empty());
  REQUIRE(buckets.front().end == arenas.total());
  REQUIRE(buckets.back().begin == 0);
  for (size_t b = 0; b < buckets.size(); ++b) {
    REQUIRE(buckets[b].begin < buckets[b].end);
    if (b > 0) REQUIRE(buckets[b].end == buckets[b - 1].begin);
    bool at_start = false;
    for (const ParamEntry& e : arenas.entries()) at_start = at_start || e.offset == buckets[b].begin;
    REQUIRE(at_start);
  }
  for (const ParamEntry& e : arenas.entries()) {
    int holders = 0;
    for (const Bucket& b : buckets) holders += e.offset >= b.begin && e.offset + e.shape.numel() <= b.end;
    REQUIRE(holders == 1);
  }
}

int64_t floats(const Bucket& b) { return b.end - b.begin; }

}  // namespace

std::vector<int64_t> begins(const std::vector<Bucket>& buckets) {
  std::vector<int64_t> out;
  for (const Bucket& b : buckets) out.push_back(b.begin);
  return out;
}

TEST_CASE("gradient buckets: a small first bucket, then full ones, highest offsets first", "[buckets]") {
  ParameterArenas arenas = ten_parameters();
  const auto& e = arenas.entries();
  // Buckets of 2000 floats whose first closes at 1000: p10 (1000 floats)
  // alone, then p9 + p8 + p7 (2400), p6 down to p2 (2000), and p1, the rest.
  const std::vector<Bucket> small_first = make_gradient_buckets(arenas, 8000, 4000);
  require_tiling(arenas, small_first);
  CHECK(begins(small_first) == std::vector<int64_t>{e[9].offset, e[6].offset, e[1].offset, e[0].offset});
  // Without it the first is a full one: p10 + p9 + p8 (2700), p7 down to p4 (2200), p3 down to p1.
  const std::vector<Bucket> plain = make_gradient_buckets(arenas, 8000);
  require_tiling(arenas, plain);
  CHECK(begins(plain) == std::vector<int64_t>{e[7].offset, e[3].offset, e[0].offset});
  // A first bucket larger than the others is capped at their size.
  CHECK(begins(make_gradient_buckets(arenas, 8000, 1 << 20)) == begins(plain));
  // A first bucket smaller than any parameter holds the last parameter alone.
  const std::vector<Bucket> tiny_first = make_gradient_buckets(arenas, 8000, 4);
  require_tiling(arenas, tiny_first);
  CHECK(tiny_first[0].begin == e[9].offset);
  // One bucket for everything, and one per parameter.
  CHECK(make_gradient_buckets(arenas, size_t(1) << 30, size_t(1) << 30).size() == 1);
  const std::vector<Bucket> each = make_gradient_buckets(arenas, 4, 4);
  require_tiling(arenas, each);
  CHECK(each.size() == e.size());
}
