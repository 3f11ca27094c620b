// Sizes from files and arguments: checked arithmetic and messages that name
// what is wrong (never only "stoi" or "std::bad_alloc").
#include <catch2/catch.hpp>

#include <cstdint>

#include "base/error.h"
#include "data/cifar.h"
#include "runtime/shape.h"
#include "test_data_util.h"

using namespace lockstep;
using Catch::Matchers::Contains;

TEST_CASE("shape: an element count beyond 64 bits is an error naming the shape", "[data][reliability]") {
  const int64_t big = int64_t{1} << 32;
  // Before the fix: 2^32 * 2^32 * 4 wrapped to 0.
  REQUIRE_THROWS_WITH(Shape({big, big, 4}).numel(),
                      Contains("shape [4294967296, 4294967296, 4] has more elements than fit in 64 bits"));
  REQUIRE_THROWS_WITH(Shape({1, big, big, 4}).per_sample(), Contains("more elements than fit in 64 bits"));
  REQUIRE(Shape({big, big / 2 - 1}).numel() == big * (big / 2 - 1));
  REQUIRE(Shape({2, 0, 3}).numel() == 0);
  REQUIRE(Shape{}.numel() == 0);
}

TEST_CASE("CIFAR-10 folder: a batch number beyond int is not a bare stoi error", "[data][reliability]") {
  data_test::TempDir dir;
  const std::vector<uint8_t> record(1 + 3 * 32 * 32, 0);
  data_test::write_bytes(dir / "data_batch_1.bin", record);
  data_test::write_bytes(dir / "data_batch_99999999999.bin", record);
  data_test::write_bytes(dir / "test_batch.bin", record);
  // Before the fix: std::out_of_range("stoi").
  const auto files = data::find_cifar10_files(dir.str());
  REQUIRE(files.has_value());
  REQUIRE(files->train.size() == 2);
  REQUIRE(files->train.front() == dir / "data_batch_1.bin");
}
