// Split folders as users name them, the per-class test fraction, and skipped
// files named once each.
#include <catch2/catch.hpp>

#include "data/dataset.h"
#include "data/open_dataset.h"
#include "data/split.h"
#include "data/split_folders.h"
#include "base/error.h"
#include "test_data_util.h"

using namespace lockstep;
using namespace lockstep::data;
using data_test::TempDir;

namespace {

void write_images(const TempDir& dir, const std::vector<std::string>& paths) {
  auto img = data_test::make_image(6, 6, 3, [](int y, int x, int c) { return y + x + c; });
  for (const std::string& p : paths) data_test::write_png(dir / p, 6, 6, 3, img);
}

}  // namespace

TEST_CASE("split folders: train/ beside any test name, in any case, and TrainData/ beside ValidationData/",
          "[data][folder]") {
  for (const std::string test_name : {"test", "val", "Valid", "VALIDATION", "ValidationData"}) {
    DYNAMIC_SECTION(test_name) {
      TempDir dir;
      const std::string train_name = test_name == "ValidationData" ? "TrainData" : "Train";
      write_images(dir, {train_name + "/cat/1.png", train_name + "/dog/1.png", train_name + "/dog/2.png",
                         test_name + "/cat/1.png"});
      const SplitFolders found = find_split_folders(dir.str());
      REQUIRE(found.train == dir / train_name);
      REQUIRE(found.test == dir / test_name);
      DataSets sets = open_dataset(dir.str());
      REQUIRE_FALSE(sets.split);
      REQUIRE(sets.train->size() == 3);
      REQUIRE(sets.test->size() == 1);
      REQUIRE(sets.test->class_names() == std::vector<std::string>{"cat", "dog"});
    }
  }
}

TEST_CASE("split folders: ambiguous layouts are errors that list what was found", "[data][folder]") {
  TempDir dir;
  write_images(dir, {"train/a/1.png", "val/a/1.png", "Test/a/1.png"});
  REQUIRE_THROWS_WITH(find_split_folders(dir.str()),
                      Catch::Contains("more than one test folder") && Catch::Contains("found train/, Test/, val/"));
  TempDir two_trains;
  write_images(two_trains, {"train/a/1.png", "TrainData/a/1.png", "test/a/1.png"});
  REQUIRE_THROWS_WITH(open_dataset(two_trains.str()),
                      Catch::Contains("more than one training folder") && Catch::Contains("TrainData/, train/"));
  TempDir test_only;
  write_images(test_only, {"validation/a/1.png", "b/1.png"});
  REQUIRE_THROWS_WITH(open_dataset(test_only.str()), Catch::Contains("a test folder without a training folder"));
  // No split names at all: a folder of classes.
  TempDir classes;
  write_images(classes, {"a/1.png", "b/1.png"});
  const SplitFolders none = find_split_folders(classes.str());
  REQUIRE(none.train.empty());
  REQUIRE(none.test.empty());
}

TEST_CASE("split folders: a train/ folder alone is split per class like a folder of classes", "[data][folder]") {
  TempDir dir;
  std::vector<std::string> paths;
  for (int i = 0; i < 10; ++i) {
    paths.push_back("train/a/" + std::to_string(i) + ".png");
    paths.push_back("train/b/" + std::to_string(i) + ".png");
  }
  write_images(dir, paths);
  DataOptions o;
  o.test_fraction = 0.2;
  o.split_seed = 9;
  DataSets sets = open_dataset(dir.str(), o);
  REQUIRE(sets.split);
  REQUIRE(sets.train->class_names() == std::vector<std::string>{"a", "b"});
  REQUIRE(sets.test->class_counts() == std::vector<int64_t>{2, 2});
  // open_test_dataset of the same folder gives the same held-out images.
  DataSets alone = open_test_dataset(dir.str(), o);
  REQUIRE(alone.test->size() == 4);
  for (int64_t i = 0; i < 4; ++i) REQUIRE(alone.test->sample_name(i) == sets.test->sample_name(i));
  // A fraction of 0: all of it trains, no test set.
  o.test_fraction = 0.0;
  DataSets all = open_dataset(dir.str(), o);
  REQUIRE(all.train->size() == 20);
  REQUIRE(all.test == nullptr);
}

TEST_CASE("test fraction: stratified per class and seeded", "[data]") {
  std::vector<int32_t> labels;
  for (int c = 0; c < 5; ++c)
    for (int i = 0; i < 10; ++i) labels.push_back(c);
  const SplitIndices a = stratified_split(labels, 5, 0.1, 1), again = stratified_split(labels, 5, 0.1, 1);
  const SplitIndices other = stratified_split(labels, 5, 0.1, 2);
  REQUIRE(a.test.size() == 5);
  for (int c = 0; c < 5; ++c) REQUIRE(labels[a.test[c]] == c);  // one of each class, in ascending order
  REQUIRE(a.test == again.test);
  REQUIRE(a.test != other.test);
}

TEST_CASE("bad files: each file listed once with its message, all of them kept", "[data]") {
  BadFiles bad;
  for (int epoch = 0; epoch < 3; ++epoch)
    for (int i = 0; i < 8; ++i) bad.add("/d/" + std::to_string(i) + ".jpg", "cannot decode image /d/" + std::to_string(i) + ".jpg");
  REQUIRE(bad.count == 8);
  REQUIRE(bad.files.size() == 8);
  REQUIRE(bad.files[7].path == "/d/7.jpg");
  REQUIRE_THAT(bad.summary(), Catch::StartsWith("skipped 8 bad images: cannot decode image /d/0.jpg; ") &&
                                  Catch::Contains("/d/4.jpg; and 3 more") && !Catch::Contains("/d/5.jpg"));
  BadFiles other;
  other.add("/d/0.jpg", "again");
  other.add("/e/x.png", "zero-byte image /e/x.png");
  bad.merge(other);
  REQUIRE(bad.count == 9);
}
