#include <catch2/catch.hpp>

#include <cstdlib>
#include <numeric>

#include "data/idx.h"
#include "data/open_dataset.h"
#include "base/error.h"
#include "test_data_util.h"

using namespace lockstep;
using namespace lockstep::data;
using data_test::TempDir;
namespace fs = std::filesystem;

namespace {

int64_t byte_sum(const InMemoryDataset& d, int64_t index) {
  const uint8_t* p = d.sample_bytes(index);
  return std::accumulate(p, p + d.sample_shape().numel(), int64_t{0});
}

// A small IDX folder: 6 images of 3x5 (pixel = 10 * i + x), labels 0..2 twice.
void write_small_idx(const TempDir& dir, bool gzip) {
  auto images = data_test::idx_images(6, 3, 5, [](uint32_t i, uint32_t, uint32_t x) { return 10 * i + x; });
  auto labels = data_test::idx_labels({0, 1, 2, 0, 1, 2});
  auto test_images = data_test::idx_images(3, 3, 5, [](uint32_t i, uint32_t y, uint32_t) { return 100 + i + y; });
  auto test_labels = data_test::idx_labels({2, 1, 0});
  auto put = gzip ? data_test::write_gzip : data_test::write_bytes;
  const std::string gz = gzip ? ".gz" : "";
  put(dir / ("train-images-idx3-ubyte" + gz), images);
  put(dir / ("train-labels-idx1-ubyte" + gz), labels);
  put(dir / ("t10k-images-idx3-ubyte" + gz), test_images);
  put(dir / ("t10k-labels-idx1-ubyte" + gz), test_labels);
}

}  // namespace

TEST_CASE("Fashion-MNIST opens by content: 60000 + 10000 images of 28x28, 6000 per class", "[data][idx]") {
  const std::string dir = data_test::fashion_mnist_dir();
  DataSets sets = open_dataset(dir);
  REQUIRE(sets.format == DataFormat::idx);
  REQUIRE(sets.train->size() == 60000);
  REQUIRE(sets.test->size() == 10000);
  REQUIRE(sets.train->sample_shape() == Shape{1, 28, 28});
  REQUIRE(sets.test->sample_shape() == Shape{1, 28, 28});
  REQUIRE(sets.train->num_classes() == 10);
  REQUIRE(sets.train->class_names().front() == "T-shirt/top");
  REQUIRE(sets.train->class_names().back() == "Ankle boot");
  for (int64_t count : sets.train->class_counts()) REQUIRE(count == 6000);
  for (int64_t count : sets.test->class_counts()) REQUIRE(count == 1000);
}

TEST_CASE("Fashion-MNIST pixels and labels equal what Python's gzip module reads", "[data][idx]") {
  const std::string dir = data_test::fashion_mnist_dir();
  auto train = read_idx_dataset(dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz",
                                idx_class_names(dir, dir + "/train-labels-idx1-ubyte.gz", 10));
  auto test = read_idx_dataset(dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz",
                               idx_class_names(dir, dir + "/t10k-labels-idx1-ubyte.gz", 10));
  // Computed independently with Python 3.11 on Debian's dataset-fashion-mnist:
  //   d = gzip.open('train-images-idx3-ubyte.gz').read(); sum(d[16:16+784])   -> 76247
  //   l = gzip.open('train-labels-idx1-ubyte.gz').read(); list(l[8:18])       -> [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
  //   t = gzip.open('t10k-images-idx3-ubyte.gz').read();  sum(t[16:16+784])   -> 33456
  //   tl = gzip.open('t10k-labels-idx1-ubyte.gz').read(); list(tl[8:18])     -> [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]
  REQUIRE(byte_sum(*train, 0) == 76247);
  REQUIRE(byte_sum(*test, 0) == 33456);
  const std::vector<int32_t> train_labels = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
  const std::vector<int32_t> test_labels = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  for (int i = 0; i < 10; ++i) {
    REQUIRE(train->label(i) == train_labels[i]);
    REQUIRE(test->label(i) == test_labels[i]);
  }
  // read() gives the same pixels as floats in [0, 1].
  std::vector<float> pixels(784);
  train->read(0, pixels.data());
  double sum = 0;
  for (float p : pixels) sum += p;
  REQUIRE(sum * 255.0 == Approx(76247.0).epsilon(1e-6));
}

TEST_CASE("the default data set is the folder LOCKSTEP_FASHION_MNIST names, else Debian's", "[data][idx]") {
  const char* before = std::getenv("LOCKSTEP_FASHION_MNIST");
  const std::string saved = before ? before : "";
  TempDir dir;
  write_small_idx(dir, true);
  REQUIRE(setenv("LOCKSTEP_FASHION_MNIST", dir.path().c_str(), 1) == 0);
  CHECK(default_data_path() == dir.path().string());
  DataSets sets = open_dataset(default_data_path());
  CHECK(sets.train->size() == 6);
  CHECK(sets.test->size() == 3);
  REQUIRE(setenv("LOCKSTEP_FASHION_MNIST", "", 1) == 0);
  CHECK(default_data_path() == "/usr/share/datasets/fashion-mnist");
  REQUIRE(unsetenv("LOCKSTEP_FASHION_MNIST") == 0);
  CHECK(default_data_path() == "/usr/share/datasets/fashion-mnist");
  if (before) setenv("LOCKSTEP_FASHION_MNIST", saved.c_str(), 1);
}

// Before: the names came from the folder's path: a copy of Fashion-MNIST in
// a folder without "fashion" in its name was labelled 0..9, and any other ten
// classes in a folder with it in its name were labelled as clothes.
TEST_CASE("idx: class names come from the files, never the folder's name", "[data][idx]") {
  const std::vector<std::string> clothes = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                            "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  const std::vector<std::string> digits = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  const std::string fashion = data_test::fashion_mnist_dir();
  TempDir root;
  // Fashion-MNIST's own files, in a folder of another name (links: the same bytes).
  const fs::path renamed = root.path() / "clothes";
  fs::create_directories(renamed);
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                           "t10k-labels-idx1-ubyte.gz"})
    fs::create_symlink(fs::path(fashion) / name, renamed / name);
  DataSets sets = open_dataset(renamed.string());
  CHECK(sets.train->class_names() == clothes);
  CHECK(sets.test->class_names() == clothes);
  CHECK(open_test_dataset(renamed.string(), {}, {}).test->class_names() == clothes);
  // Ten classes of other labels in a folder named for Fashion-MNIST: digits.
  const fs::path look_alike = root.path() / "fashion-mnist-copy";
  fs::create_directories(look_alike);
  auto images = data_test::idx_images(10, 2, 2, [](uint32_t i, uint32_t, uint32_t) { return i; });
  for (const char* prefix : {"train", "t10k"}) {
    data_test::write_gzip(look_alike / (std::string(prefix) + "-images-idx3-ubyte.gz"), images);
    data_test::write_gzip(look_alike / (std::string(prefix) + "-labels-idx1-ubyte.gz"),
                          data_test::idx_labels({9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  }
  CHECK(open_dataset(look_alike.string()).train->class_names() == digits);
  // classes.txt beside the files names them, one a line (CRLF too).
  data_test::write_bytes(look_alike / "classes.txt", {'z', 'e', 'r', 'o', '\r', '\n', 'o', 'n', 'e', '\n'});
  CHECK_THROWS_WITH(open_dataset(look_alike.string()),
                    Catch::Contains("label 9 of sample 0 is out of range [0, 2)"));
  std::string ten;
  for (int c = 0; c < 10; ++c) ten += "class " + std::to_string(c) + "\n";
  data_test::write_bytes(look_alike / "classes.txt", std::vector<uint8_t>(ten.begin(), ten.end()));
  CHECK(open_dataset(look_alike.string()).train->class_names().back() == "class 9");
  for (const std::string& bad : {std::string("a\n\nb\n"), std::string("a\nb\na\n"), std::string()}) {
    INFO(bad);
    data_test::write_bytes(look_alike / "classes.txt", std::vector<uint8_t>(bad.begin(), bad.end()));
    CHECK_THROWS_WITH(open_dataset(look_alike.string()),
                      Catch::Contains("class names file " + (look_alike / "classes.txt").string() + ": line"));
  }
}

TEST_CASE("idx: gzip and raw files give the same data set", "[data][idx]") {
  TempDir raw, gz;
  write_small_idx(raw, false);
  write_small_idx(gz, true);
  DataSets a = open_dataset(raw.str());
  DataSets b = open_dataset(gz.str());
  REQUIRE(a.format == DataFormat::idx);
  REQUIRE(a.train->size() == 6);
  REQUIRE(a.test->size() == 3);
  REQUIRE(a.train->sample_shape() == Shape{1, 3, 5});
  REQUIRE(a.train->class_names() == std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"});
  std::vector<float> x(15), y(15);
  for (int64_t i = 0; i < 6; ++i) {
    a.train->read(i, x.data());
    b.train->read(i, y.data());
    REQUIRE(x == y);
    REQUIRE(x[4] * 255.0f == Approx(10 * i + 4));
    REQUIRE(a.train->label(i) == b.train->label(i));
  }
  REQUIRE(a.test->label(0) == 2);
}

TEST_CASE("idx: the dotted file names (train-images.idx3-ubyte) are recognised", "[data][idx]") {
  TempDir dir;
  write_small_idx(dir, false);
  for (std::string name : {"train-images", "train-labels", "t10k-images", "t10k-labels"}) {
    const std::string idx = name.find("images") != std::string::npos ? "idx3" : "idx1";
    std::filesystem::rename(dir / (name + "-" + idx + "-ubyte"), dir / (name + "." + idx + "-ubyte"));
  }
  REQUIRE(open_dataset(dir.str()).train->size() == 6);
}

TEST_CASE("idx: a truncated images file is an error naming it", "[data][idx]") {
  TempDir dir;
  write_small_idx(dir, false);
  const std::string file = dir / "train-images-idx3-ubyte";
  auto bytes = data_test::read_all(file);
  bytes.resize(bytes.size() - 7);
  data_test::write_bytes(file, bytes);
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains(file) && Catch::Contains("truncated") &&
                                                   Catch::Contains("only 83 follow"));
  bytes.resize(10);  // inside the header
  data_test::write_bytes(file, bytes);
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains(file) && Catch::Contains("truncated header"));
}

TEST_CASE("idx: a cut gzip stream is an error naming the file", "[data][idx]") {
  TempDir dir;
  // Pixels that do not compress to nothing, so cutting the stream loses payload.
  auto images = data_test::idx_images(50, 28, 28, [](uint32_t i, uint32_t y, uint32_t x) { return (i * 7919 + y * 131 + x * 17) % 251; });
  const std::string file = dir / "train-images-idx3-ubyte.gz";
  data_test::write_gzip(file, images);
  auto bytes = data_test::read_all(file);
  bytes.resize(bytes.size() / 2);
  data_test::write_bytes(file, bytes);
  REQUIRE_THROWS_WITH(read_idx(file, 3), Catch::Contains(file) && Catch::Contains("gzip stream is damaged or truncated"));
}

TEST_CASE("idx: a wrong magic number is an error naming the file", "[data][idx]") {
  TempDir dir;
  write_small_idx(dir, false);
  // Labels where images belong.
  std::filesystem::copy_file(dir / "train-labels-idx1-ubyte", dir / "train-images-idx3-ubyte",
                             std::filesystem::copy_options::overwrite_existing);
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains(dir / "train-images-idx3-ubyte") &&
                                                   Catch::Contains("wrong magic number 0x00000801") &&
                                                   Catch::Contains("expected 0x00000803"));
  data_test::write_bytes(dir / "train-images-idx3-ubyte", {'P', 'K', 3, 4, 0, 0, 0, 0});
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains("wrong magic number 0x504B0304"));
}

TEST_CASE("idx: image and label counts that differ are an error naming both files", "[data][idx]") {
  TempDir dir;
  write_small_idx(dir, false);
  data_test::write_bytes(dir / "t10k-labels-idx1-ubyte", data_test::idx_labels({1, 2}));
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains(dir / "t10k-images-idx3-ubyte") &&
                                                   Catch::Contains(dir / "t10k-labels-idx1-ubyte") &&
                                                   Catch::Contains("3 images but 2 labels"));
}

TEST_CASE("idx: a label out of range is an error naming the file and the sample", "[data][idx]") {
  TempDir dir;
  write_small_idx(dir, false);
  data_test::write_bytes(dir / "train-labels-idx1-ubyte", data_test::idx_labels({0, 1, 2, 0, 10, 2}));
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains(dir / "train-labels-idx1-ubyte") &&
                                                   Catch::Contains("label 10 of sample 4 is out of range [0, 10)"));
  DataOptions wide;
  wide.num_classes = 11;
  REQUIRE(open_dataset(dir.str(), wide).train->label(4) == 10);
}

TEST_CASE("idx: a folder with the training files but not the test files names what is missing", "[data][idx]") {
  TempDir dir;
  write_small_idx(dir, true);
  std::filesystem::remove(dir / "t10k-labels-idx1-ubyte.gz");
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains("no t10k-labels-idx1-ubyte[.gz]"));
}

TEST_CASE("open_dataset: a missing path or a plain file is an error naming it", "[data][idx]") {
  TempDir dir;
  REQUIRE_THROWS_WITH(open_dataset(dir / "nowhere"), Catch::Contains(dir / "nowhere") &&
                                                         Catch::Contains("no such file or folder"));
  data_test::write_bytes(dir / "file.bin", {1, 2, 3});
  REQUIRE_THROWS_WITH(open_dataset(dir / "file.bin"), Catch::Contains(dir / "file.bin") && Catch::Contains("is a file"));
}
