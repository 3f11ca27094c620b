#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>

#include "data/image_folder.h"
#include "data/loader.h"
#include "data/open_dataset.h"
#include "base/error.h"
#include "test_data_util.h"

using namespace lockstep;
using namespace lockstep::data;
using data_test::TempDir;

namespace {

auto solid(int r, int g, int b) {
  return [=](int, int, int c) { return c == 0 ? r : c == 1 ? g : b; };
}

// Classes created out of order; PNG and JPEG, several sizes, grey and colour,
// plus files that must be ignored.
void write_folder(const TempDir& dir) {
  data_test::write_png(dir / "dog/b.png", 40, 30, 3, data_test::make_image(40, 30, 3, solid(10, 20, 30)));
  data_test::write_jpg(dir / "dog/a.jpg", 64, 48, 3, data_test::make_image(64, 48, 3, solid(200, 100, 50)));
  data_test::write_png(dir / "cat/grey.png", 16, 16, 1, data_test::make_image(16, 16, 1, solid(90, 0, 0)));
  data_test::write_jpg(dir / "cat/small.JPEG", 20, 10, 1, data_test::make_image(20, 10, 1, solid(160, 0, 0)));
  data_test::write_png(dir / "cat/nested/deep.png", 8, 8, 3, data_test::make_image(8, 8, 3, solid(1, 2, 3)));
  auto bmp = data_test::make_image(12, 12, 3, solid(50, 60, 70));
  std::filesystem::create_directories(dir / "ant");
  REQUIRE(stbi_write_bmp((dir / "ant/x.bmp").c_str(), 12, 12, 3, bmp.data()) != 0);
  // Ignored: hidden files and folders, other file types, a hidden class folder.
  data_test::write_bytes(dir / "cat/.DS_Store", {0, 1, 2});
  data_test::write_bytes(dir / "cat/notes.txt", {'h', 'i'});
  data_test::write_png(dir / "cat/.thumbs/t.png", 4, 4, 1, data_test::make_image(4, 4, 1, solid(0, 0, 0)));
  data_test::write_png(dir / ".git/objects.png", 4, 4, 1, data_test::make_image(4, 4, 1, solid(0, 0, 0)));
  data_test::write_bytes(dir / "README.md", {'#'});
}

ImageFolderOptions options(int64_t channels, int64_t size) {
  ImageFolderOptions o;
  o.channels = channels;
  o.height = o.width = size;
  return o;
}

std::vector<float> read(const Dataset& d, int64_t index) {
  std::vector<float> x(static_cast<size_t>(d.sample_shape().numel()));
  d.read(index, x.data());
  return x;
}

void require_all_near(const std::vector<float>& x, int64_t plane, std::vector<int> expected, int tolerance) {
  for (size_t c = 0; c < expected.size(); ++c)
    for (int64_t i = 0; i < plane; ++i) REQUIRE(std::abs(x[c * plane + i] * 255.0f - expected[c]) <= tolerance + 0.01f);
}

}  // namespace

TEST_CASE("image folder: sorted class names, PNG/JPEG/BMP of any size and colour, others ignored", "[data][folder]") {
  TempDir dir;
  write_folder(dir);
  ImageFolder rgb(dir.str(), options(3, 24));
  REQUIRE(rgb.class_names() == std::vector<std::string>{"ant", "cat", "dog"});
  REQUIRE(rgb.size() == 6);
  REQUIRE(rgb.sample_shape() == Shape{3, 24, 24});
  REQUIRE(rgb.labels() == std::vector<int32_t>{0, 1, 1, 1, 2, 2});
  // Sorted paths within a class: cat/grey.png, cat/nested/deep.png, cat/small.JPEG.
  REQUIRE(rgb.file(1) == dir / "cat/grey.png");
  REQUIRE(rgb.file(2) == dir / "cat/nested/deep.png");
  REQUIRE(rgb.file(4) == dir / "dog/a.jpg");
  const int64_t plane = 24 * 24;
  require_all_near(read(rgb, 0), plane, {50, 60, 70}, 0);     // BMP, resized up
  require_all_near(read(rgb, 1), plane, {90, 90, 90}, 0);     // grey PNG as RGB
  require_all_near(read(rgb, 3), plane, {160, 160, 160}, 3);  // grey JPEG
  require_all_near(read(rgb, 4), plane, {200, 100, 50}, 3);   // colour JPEG, resized down
  require_all_near(read(rgb, 5), plane, {10, 20, 30}, 0);     // colour PNG
  // Grey: stb's luma, (77 R + 150 G + 29 B) >> 8.
  ImageFolder grey(dir.str(), options(1, 7));
  REQUIRE(grey.sample_shape() == Shape{1, 7, 7});
  require_all_near(read(grey, 5), 49, {(77 * 10 + 150 * 20 + 29 * 30) >> 8}, 0);
  require_all_near(read(grey, 1), 49, {90}, 0);
}

TEST_CASE("image folder: an image of the target size keeps its pixels, channel-major", "[data][folder]") {
  TempDir dir;
  auto pattern = [](int y, int x, int c) { return 40 * c + 7 * y + x; };
  data_test::write_png(dir / "a/p.png", 5, 3, 3, data_test::make_image(5, 3, 3, pattern));
  ImageFolderOptions o = options(3, 0);
  o.height = 3;
  o.width = 5;
  ImageFolder folder(dir.str(), o);
  std::vector<float> x = read(folder, 0);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 3; ++y)
      for (int xx = 0; xx < 5; ++xx) REQUIRE(x[(c * 3 + y) * 5 + xx] * 255.0f == Approx(pattern(y, xx, c)));
  std::vector<float> direct(45);
  load_image(dir / "a/p.png", 3, 3, 5, direct.data());
  REQUIRE(direct == x);
}

TEST_CASE("image folder: a centre crop keeps the aspect ratio and takes the middle of the shorter side",
          "[data][folder]") {
  TempDir dir;
  auto pattern = [](int y, int x, int c) { return 40 * c + 7 * y + x; };
  data_test::write_png(dir / "a/wide.png", 12, 8, 3, data_test::make_image(12, 8, 3, pattern));
  data_test::write_png(dir / "b/tall.png", 8, 12, 3, data_test::make_image(8, 12, 3, pattern));
  ImageFolderOptions o = options(3, 4);
  const auto at = [](const std::vector<float>& x, int c, int y, int xx) { return x[(c * 4 + y) * 4 + xx] * 255.0f; };
  SECTION("the whole shorter side (1): the centred 8x8 window, shrunk 2x2 into 4x4") {
    o.center_crop = 1.0;
    ImageFolder folder(dir.str(), o);
    const std::vector<float> wide = read(folder, 0), tall = read(folder, 1);
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 4; ++x) {
          // The mean of rows 2y, 2y+1 and columns 2+2x, 3+2x (wide) or rows 2+2y, 3+2y (tall).
          REQUIRE(at(wide, c, y, x) == Approx(40 * c + 7 * (2 * y + 0.5) + (2 * x + 2.5)));
          REQUIRE(at(tall, c, y, x) == Approx(40 * c + 7 * (2 * y + 2.5) + (2 * x + 0.5)));
        }
  }
  SECTION("half of it (0.5): the centred 4x4 window, pixel for pixel") {
    o.center_crop = 0.5;
    ImageFolder folder(dir.str(), o);
    const std::vector<float> wide = read(folder, 0);
    std::vector<float> direct(48);
    load_image(dir / "a/wide.png", 3, 4, 4, direct.data(), kDefaultMaxImagePixels, 0.5);
    REQUIRE(direct == wide);
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 4; ++x) REQUIRE(at(wide, c, y, x) == Approx(pattern(y + 2, x + 4, c)));
  }
  SECTION("outside [0, 1] is refused, naming the folder") {
    o.center_crop = 1.5;
    REQUIRE_THROWS_WITH(ImageFolder(dir.str(), o), Catch::Contains(dir.str()) && Catch::Contains("centre crop 1.5"));
  }
}

TEST_CASE("image folder: a centre crop of a large JPEG, decoded at a reduced scale, matches the full-size crop",
          "[data][folder]") {
  TempDir dir;
  // A smooth photo-sized image whose left and right thirds differ from the middle.
  auto photo = [](int y, int x, int c) {
    const int band = x < 100 ? 200 : x >= 300 ? 20 : 110;
    return std::clamp(band + (y / 6) - 25 + 30 * c - 30, 0, 255);
  };
  const std::vector<uint8_t> pixels = data_test::make_image(400, 300, 3, photo);
  data_test::write_jpg(dir / "a/photo.jpg", 400, 300, 3, pixels, 98);
  data_test::write_png(dir / "b/photo.png", 400, 300, 3, pixels);
  ImageFolderOptions o = options(3, 32);
  o.center_crop = 0.875;
  ImageFolder folder(dir.str(), o);
  const std::vector<float> jpeg = read(folder, 0), png = read(folder, 1);
  // The JPEG is decoded at 1/8 scale (50x38 pixels) and its 33x33 window of
  // whole pixels shrunk, the PNG's 263x263 window at full size: the windows
  // differ by under one scaled pixel, which moves a sharp band edge by under
  // half an output column; elsewhere the two agree within JPEG's loss.
  double sum = 0.0;
  for (size_t i = 0; i < jpeg.size(); ++i) sum += double(std::abs(jpeg[i] - png[i])) * 255.0;
  REQUIRE(sum / double(jpeg.size()) < 3.0);
  // The window is the middle: the bright left band (source columns 0-99)
  // fills output columns 0-7 stretched, 0-3 of the window (which starts at
  // source column 69, 8.2 source columns an output column).
  const auto column_mean = [&](const std::vector<float>& x, int column) {
    double sum = 0.0;
    for (int y = 0; y < 32; ++y) sum += x[(1 * 32 + y) * 32 + column] * 255.0;
    return sum / 32.0;
  };
  o.center_crop = 0.0;
  const std::vector<float> stretched = read(ImageFolder(dir.str(), o), 1);
  REQUIRE(column_mean(stretched, 5) > 170.0);
  REQUIRE(column_mean(png, 5) < 150.0);
  REQUIRE(column_mean(jpeg, 5) < 150.0);
  REQUIRE(column_mean(png, 16) == Approx(column_mean(stretched, 16)).margin(3.0));
}

TEST_CASE("image folders keep their decoded images when they fit the budget, and say what that takes",
          "[data][folder]") {
  DataOptions options;
  options.height = options.width = 4;
  options.test_fraction = 0.2;
  const int64_t need = 10 * 3 * 4 * 4;  // the whole folder, decoded at 3x4x4
  for (int64_t budget : {need, need - 1, int64_t(0)}) {
    INFO("budget " << budget);
    TempDir dir;
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 5; ++i)
        data_test::write_png(dir / ("c" + std::to_string(c) + "/" + std::to_string(i) + ".png"), 9, 7, 3,
                             data_test::make_image(9, 7, 3, [&](int y, int x, int ch) { return 10 * i + y + x + ch; }));
    options.cache_budget_bytes = budget;
    const DataSets sets = open_dataset(dir.str(), options);
    REQUIRE(sets.decoded_bytes == need);
    REQUIRE(sets.decoded_kept == (budget == need));
    std::vector<std::vector<float>> first;
    for (int64_t k = 0; k < sets.train->size(); ++k) first.push_back(read(*sets.train, k));
    // Kept, the images are never read again: with the files gone the same pixels come back.
    std::filesystem::remove_all(dir / "c0");
    std::filesystem::remove_all(dir / "c1");
    for (int64_t k = 0; k < sets.train->size(); ++k) {
      if (sets.decoded_kept) REQUIRE(read(*sets.train, k) == first[k]);
      else REQUIRE_THROWS_WITH(read(*sets.train, k), Catch::Contains(dir.str()));
    }
  }
  TempDir dir;
  data_test::write_png(dir / "a/0.png", 4, 4, 3, data_test::make_image(4, 4, 3, solid(1, 2, 3)));
  options.cache_budget_bytes = 0;
  options.cache_images = true;  // asked for, whatever the budget
  options.test_fraction = 0.0;
  REQUIRE(open_dataset(dir.str(), options).decoded_kept);
}

TEST_CASE("image folder: a corrupt image is an error naming it, or skipped and reported", "[data][folder]") {
  TempDir dir;
  write_folder(dir);
  data_test::write_bytes(dir / "dog/broken.png", {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'});
  REQUIRE_THROWS_WITH(ImageFolder(dir.str(), options(3, 8)),
                      Catch::Contains("cannot decode image " + (dir / "dog/broken.png")));
  DataOptions skip;
  skip.skip_bad_images = true;
  skip.test_fraction = 0.0;
  DataSets sets = open_dataset(dir.str(), skip);
  REQUIRE(sets.train->size() == 6);
  REQUIRE(sets.skipped.count == 1);
  REQUIRE_THAT(sets.skipped.summary(), Catch::Contains("skipped 1 bad image") && Catch::Contains(dir / "dog/broken.png"));
}

TEST_CASE("image folder: a zero-byte image is an error naming it", "[data][folder]") {
  TempDir dir;
  write_folder(dir);
  data_test::write_bytes(dir / "ant/empty.jpg", {});
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains("zero-byte image " + (dir / "ant/empty.jpg")));
}

TEST_CASE("image folder: an empty class folder is an error naming it", "[data][folder]") {
  TempDir dir;
  write_folder(dir);
  std::filesystem::create_directories(dir / "eel");
  data_test::write_bytes(dir / "eel/readme.txt", {'x'});  // not an image: the class is still empty
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains("empty class folder " + (dir / "eel")));
}

TEST_CASE("image folder: a folder with no class sub-folders is an error naming it", "[data][folder]") {
  TempDir dir;
  data_test::write_png(dir / "loose.png", 4, 4, 1, data_test::make_image(4, 4, 1, solid(1, 1, 1)));
  REQUIRE_THROWS_WITH(ImageFolder(dir.str(), options(3, 8)), Catch::Contains("image folder " + dir.str()) &&
                                                                 Catch::Contains("no class sub-folders") &&
                                                                 Catch::Contains("its images lie directly in it"));
  // Through open_dataset the message lists every format it looked for.
  TempDir empty;
  REQUIRE_THROWS_WITH(open_dataset(empty.str()), Catch::Contains("data path " + empty.str()) &&
                                                     Catch::Contains("no class sub-folders") &&
                                                     Catch::Contains("train-images-idx3-ubyte"));
}

TEST_CASE("image folder: an image cut short fails when loaded, naming it, or is skipped", "[data][folder]") {
  TempDir dir;
  // Noise does not compress, so half the file lacks half the pixel data.
  std::srand(7);
  auto noise = data_test::make_image(64, 64, 3, [](int, int, int) { return std::rand() % 256; });
  for (int i = 0; i < 4; ++i)
    data_test::write_png(dir / ("a/" + std::to_string(i) + ".png"), 64, 64, 3, noise);
  const std::string cut = dir / "a/2.png";
  auto bytes = data_test::read_all(cut);
  bytes.resize(bytes.size() / 2);
  data_test::write_bytes(cut, bytes);
  auto folder = std::make_shared<ImageFolder>(dir.str(), options(3, 16));  // the header is intact
  REQUIRE(folder->size() == 4);

  LoaderConfig config;
  config.batch_size = 4;
  config.shuffle = false;
  config.normalize = false;
  Loader strict(folder, config);
  strict.start_epoch(0, 0);
  HostBatch batch;
  REQUIRE_THROWS_WITH(strict.next(batch), Catch::Contains("cannot decode image " + cut));
  REQUIRE_FALSE(strict.next(batch));  // the epoch ended with the error

  config.skip_bad_images = true;
  Loader lenient(folder, config);
  lenient.start_epoch(0, 0);
  REQUIRE(lenient.next(batch));
  REQUIRE(batch.count == 3);
  REQUIRE(batch.images.shape() == Shape{3, 3, 16, 16});
  REQUIRE_FALSE(lenient.next(batch));
  REQUIRE(lenient.skipped().count == 1);
  REQUIRE_THAT(lenient.skipped().summary(), Catch::Contains(cut));
}

TEST_CASE("image folder: train/ and test/ halves are used as given, labelled alike", "[data][folder]") {
  TempDir dir;
  auto img = data_test::make_image(6, 6, 3, solid(1, 2, 3));
  for (const char* path : {"train/cat/1.png", "train/cat/2.png", "train/dog/1.png", "train/eel/1.png",
                           "test/dog/1.png", "test/eel/1.png"})
    data_test::write_png(dir / path, 6, 6, 3, img);
  DataSets sets = open_dataset(dir.str());
  REQUIRE(sets.format == DataFormat::image_folder);
  REQUIRE(sets.train->size() == 4);
  REQUIRE(sets.test->size() == 2);
  REQUIRE(sets.test->class_names() == std::vector<std::string>{"cat", "dog", "eel"});
  REQUIRE(sets.test->labels() == std::vector<int32_t>{1, 2});
  // The same test folder on its own, labelled by the training classes.
  DataSets alone = open_test_dataset(dir / "test", {}, sets.train->class_names());
  REQUIRE(alone.test->labels() == std::vector<int32_t>{1, 2});
  data_test::write_png(dir / "test/fox/1.png", 6, 6, 3, img);
  REQUIRE_THROWS_WITH(open_dataset(dir.str()), Catch::Contains("class folder 'fox' is not one of the 3 training classes"));
}

TEST_CASE("image folder: a lone folder is split per class, and the cache gives the same pixels", "[data][folder]") {
  TempDir dir;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 8; ++i)
      data_test::write_png(dir / ("c" + std::to_string(c) + "/" + std::to_string(i) + ".png"), 9, 7, 3,
                           data_test::make_image(9, 7, 3, [&](int y, int x, int ch) { return 30 * c + 3 * i + y + x + ch; }));
  DataOptions o;
  o.test_fraction = 0.25;
  o.height = o.width = 5;
  DataSets sets = open_dataset(dir.str(), o);
  REQUIRE(sets.train->size() == 18);
  REQUIRE(sets.test->size() == 6);
  REQUIRE(sets.test->class_counts() == std::vector<int64_t>{2, 2, 2});

  ImageFolderOptions cached = options(3, 5);
  cached.cache = true;
  ImageFolder plain(dir.str(), options(3, 5)), with_cache(dir.str(), cached);
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t i = 0; i < plain.size(); ++i) REQUIRE(read(with_cache, i) == read(plain, i));
}
