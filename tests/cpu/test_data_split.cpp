#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "data/split.h"
#include "base/error.h"

using namespace lockstep;
using namespace lockstep::data;

namespace {
// 10 samples of class 0, 20 of class 1, 7 of class 2, interleaved.
std::vector<int32_t> uneven_labels() {
  std::vector<int32_t> labels;
  int left[3] = {10, 20, 7};
  while (left[0] + left[1] + left[2] > 0)
    for (int c = 0; c < 3; ++c)
      if (left[c] > 0) {
        --left[c];
        labels.push_back(c);
      }
  return labels;
}
}  // namespace

TEST_CASE("stratified split takes the fraction of every class, disjoint and complete", "[data][split]") {
  const std::vector<int32_t> labels = uneven_labels();
  SplitIndices split = stratified_split(labels, 3, 0.3, 42);
  std::vector<int> test_per_class(3, 0);
  for (int64_t i : split.test) ++test_per_class[labels[i]];
  REQUIRE(test_per_class == std::vector<int>{3, 6, 2});  // round(3.0), round(6.0), round(2.1)
  REQUIRE(split.train.size() + split.test.size() == labels.size());
  std::set<int64_t> all(split.train.begin(), split.train.end());
  all.insert(split.test.begin(), split.test.end());
  REQUIRE(all.size() == labels.size());
  REQUIRE(std::is_sorted(split.train.begin(), split.train.end()));
  REQUIRE(std::is_sorted(split.test.begin(), split.test.end()));
}

TEST_CASE("stratified split depends only on its seed", "[data][split]") {
  const std::vector<int32_t> labels = uneven_labels();
  REQUIRE(stratified_split(labels, 3, 0.3, 42).test == stratified_split(labels, 3, 0.3, 42).test);
  REQUIRE(stratified_split(labels, 3, 0.3, 42).test != stratified_split(labels, 3, 0.3, 43).test);
}

TEST_CASE("stratified split keeps a training sample of every class and checks its fraction", "[data][split]") {
  SplitIndices split = stratified_split({0, 1, 1, 1}, 2, 0.9, 1);
  REQUIRE(split.train.size() == 2);  // the lone class-0 sample and one of class 1
  REQUIRE(stratified_split({0, 1, 1}, 2, 0.0, 1).test.empty());
  REQUIRE_THROWS_WITH(stratified_split({0, 1}, 2, 1.0, 1), Catch::Contains("test fraction 1 is outside [0, 1)"));
  REQUIRE_THROWS_WITH(stratified_split({0, 5}, 2, 0.5, 1), Catch::Contains("label 5 of sample 1 is out of range"));
}

TEST_CASE("split_dataset gives subsets that read through to their parent", "[data][split]") {
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  for (int i = 0; i < 20; ++i) {
    pixels.push_back(static_cast<uint8_t>(i));
    labels.push_back(i % 2);
  }
  auto parent = std::make_shared<InMemoryDataset>(Shape{1, 1, 1}, pixels, labels, std::vector<std::string>{"a", "b"},
                                                  "test");
  TrainTest halves = split_dataset(parent, 0.2, 3);
  REQUIRE(halves.train->size() == 16);
  REQUIRE(halves.test->size() == 4);
  REQUIRE(halves.test->class_counts() == std::vector<int64_t>{2, 2});
  for (int64_t k = 0; k < halves.test->size(); ++k) {
    float x = 0;
    halves.test->read(k, &x);
    const int i = static_cast<int>(std::lround(x * 255.0f));
    REQUIRE(halves.test->label(k) == i % 2);
  }
  REQUIRE_THAT(halves.test->source(), Catch::Contains("test split"));
}
