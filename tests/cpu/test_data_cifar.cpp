#include <catch2/catch.hpp>

#include "data/cifar.h"
#include "data/open_dataset.h"
#include "base/error.h"
#include "test_data_util.h"

using namespace lockstep;
using namespace lockstep::data;
using data_test::TempDir;

namespace {

// `n` CIFAR-10 records: label labels[i], red plane 3 * i, green 3 * i + 1,
// blue 3 * i + 2 everywhere except pixel (y, x) = (1, 2), which is 200 + channel.
std::vector<uint8_t> cifar_records(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < labels.size(); ++i) {
    out.push_back(labels[i]);
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 1024; ++p) out.push_back(static_cast<uint8_t>(p == 1 * 32 + 2 ? 200 + c : 3 * i + c));
  }
  return out;
}

void write_small_cifar(const std::string& dir) {
  data_test::write_bytes(dir + "/data_batch_1.bin", cifar_records({0, 1, 2}));
  data_test::write_bytes(dir + "/data_batch_2.bin", cifar_records({9, 8}));
  data_test::write_bytes(dir + "/test_batch.bin", cifar_records({4, 5}));
}

}  // namespace

TEST_CASE("cifar: batches open by content, planes in R, G, B order, batches in number order", "[data][cifar]") {
  TempDir dir;
  write_small_cifar(dir.str());
  DataSets sets = open_dataset(dir.str());
  REQUIRE(sets.format == DataFormat::cifar10);
  REQUIRE(sets.train->size() == 5);
  REQUIRE(sets.test->size() == 2);
  REQUIRE(sets.train->sample_shape() == Shape{3, 32, 32});
  REQUIRE(sets.train->class_names()[0] == "airplane");
  REQUIRE(sets.train->labels() == std::vector<int32_t>{0, 1, 2, 9, 8});
  std::vector<float> x(3 * 32 * 32);
  sets.train->read(3, x.data());  // first record of data_batch_2: i = 0
  REQUIRE(x[0] == 0.0f);
  REQUIRE(x[1024] * 255.0f == Approx(1.0f));
  REQUIRE(x[2048 + 5] * 255.0f == Approx(2.0f));
  REQUIRE(x[34] * 255.0f == Approx(200.0f));
  REQUIRE(x[2048 + 34] * 255.0f == Approx(202.0f));
  REQUIRE(sets.test->label(1) == 5);
}

TEST_CASE("cifar: the cifar-10-batches-bin sub-folder and batches.meta.txt are used", "[data][cifar]") {
  TempDir dir;
  write_small_cifar(dir / "cifar-10-batches-bin");
  std::string names;
  for (int c = 0; c < 10; ++c) names += "class" + std::to_string(c) + "\n";
  names += "\n";
  data_test::write_bytes(dir / "cifar-10-batches-bin/batches.meta.txt", std::vector<uint8_t>(names.begin(), names.end()));
  DataSets sets = open_dataset(dir.str());
  REQUIRE(sets.format == DataFormat::cifar10);
  REQUIRE(sets.train->class_names()[9] == "class9");
}

TEST_CASE("cifar: a truncated batch is an error naming it", "[data][cifar]") {
  TempDir dir;
  write_small_cifar(dir.str());
  auto bytes = cifar_records({1, 2});
  bytes.resize(bytes.size() - 100);
  data_test::write_bytes(dir / "data_batch_2.bin", bytes);
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains(dir / "data_batch_2.bin") &&
                                                   Catch::Contains("truncated") &&
                                                   Catch::Contains("3073-byte records"));
  data_test::write_bytes(dir / "data_batch_2.bin", {});
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains(dir / "data_batch_2.bin") && Catch::Contains("empty"));
}

TEST_CASE("cifar: a label out of range is an error naming the batch and the record", "[data][cifar]") {
  TempDir dir;
  write_small_cifar(dir.str());
  data_test::write_bytes(dir / "test_batch.bin", cifar_records({3, 4, 12}));
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains(dir / "test_batch.bin") &&
                                                   Catch::Contains("label 12 of record 2 is out of range [0, 10)"));
}

TEST_CASE("cifar: training batches without test_batch.bin say so", "[data][cifar]") {
  TempDir dir;
  write_small_cifar(dir.str());
  std::filesystem::remove(dir / "test_batch.bin");
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains("no test_batch.bin"));
}
