#include <catch2/catch.hpp>
#include <stb/stb_image.h>
#include <turbojpeg.h>

#include <cmath>

#include "data/image_folder.h"
#include "data/image_resize.h"
#include "data/jpeg_decode.h"
#include "data/loader.h"
#include "base/error.h"
#include "test_data_util.h"

using namespace lockstep;
using namespace lockstep::data;
using data_test::TempDir;

namespace {

// Photo-like: smooth shading plus a diagonal ripple about 30 pixels long.
std::vector<uint8_t> photo(int w, int h, int channels) {
  return data_test::make_image(w, h, channels, [](int y, int x, int c) {
    return static_cast<int>(std::lround(127.5 + 60 * std::sin(x * 0.11 + c) * std::cos(y * 0.07 - c) +
                                        25 * std::sin((x + 2 * y) * 0.09 + c * c)));
  });
}

std::vector<uint8_t> decode(const std::string& path, int64_t channels, int64_t height, int64_t width) {
  std::vector<uint8_t> out(static_cast<size_t>(channels * height * width));
  decode_image(path, channels, height, width, out.data());
  return out;
}

// The slow way: stb_image decodes the whole JPEG, then the area average shrinks it.
std::vector<uint8_t> full_decode_then_shrink(const std::string& path, int64_t channels, int64_t height, int64_t width) {
  int w = 0, h = 0, n = 0;
  stbi_uc* full = stbi_load(path.c_str(), &w, &h, &n, static_cast<int>(channels));
  REQUIRE(full != nullptr);
  std::vector<uint8_t> out(static_cast<size_t>(channels * height * width));
  shrink_area(PixelsHWC{full, h, w, channels, w * channels}, height, width, out.data());
  stbi_image_free(full);
  return out;
}

double mean_abs_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  REQUIRE(a.size() == b.size());
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::abs(int{a[i]} - int{b[i]});
  return sum / static_cast<double>(a.size());
}

std::vector<float> read(const Dataset& d, int64_t index) {
  std::vector<float> x(static_cast<size_t>(d.sample_shape().numel()));
  d.read(index, x.data());
  return x;
}

ImageFolderOptions options(int64_t channels, int64_t size) {
  ImageFolderOptions o;
  o.channels = channels;
  o.height = o.width = size;
  return o;
}

}  // namespace

TEST_CASE("jpeg: the smallest DCT scale whose content still covers the target", "[data][jpeg]") {
  REQUIRE(jpeg_scale_for(96, 96, 32, 32) == JpegScale{3, 8});    // 36x36
  REQUIRE(jpeg_scale_for(96, 96, 37, 37) == JpegScale{1, 2});    // 36 < 37: 48x48
  REQUIRE(jpeg_scale_for(257, 333, 30, 40) == JpegScale{1, 8});  // 32.1 x 41.6
  REQUIRE(jpeg_scale_for(257, 333, 33, 40) == JpegScale{1, 4});  // 257/8 = 32.1 < 33
  REQUIRE(jpeg_scale_for(257, 333, 32, 42) == JpegScale{1, 4});  // 333/8 rounds up to 42 but holds 41.6
  REQUIRE(jpeg_scale_for(100, 100, 1, 1) == JpegScale{1, 8});
  REQUIRE(jpeg_scale_for(48, 64, 48, 64) == JpegScale{1, 1});   // the target size
  REQUIRE(jpeg_scale_for(10, 20, 24, 24) == JpegScale{1, 1});   // smaller than the target: never above 1
  REQUIRE(jpeg_scale_for(10, 200, 24, 24) == JpegScale{1, 1});  // smaller in one dimension
}

TEST_CASE("jpeg: decoding at a reduced scale gives nearly the pixels of a full decode and shrink", "[data][jpeg]") {
  TempDir dir;
  struct Case {
    int w, h, quality;
    int64_t target_h, target_w;
    JpegScale scale;
    int64_t scaled_w, scaled_h;
    double max_mad;
  };
  const std::vector<Case> cases = {
      {96, 96, 90, 32, 32, {3, 8}, 36, 36, 1.0},    // the benchmark's shape
      {200, 150, 95, 24, 24, {1, 4}, 50, 38, 1.5},  // last row of blocks partly padding
      {333, 257, 75, 30, 40, {1, 8}, 42, 33, 3.5},  // 1/8: block means, then 42x33 -> 40x30
      {64, 48, 90, 48, 64, {1, 1}, 64, 48, 0.25},   // full scale: only the two decoders differ
  };
  for (const Case& k : cases)
    for (int64_t channels : {1, 3}) {
      CAPTURE(k.w, k.h, k.target_h, k.target_w, channels);
      const std::string path = dir / ("p" + std::to_string(k.w) + ".jpg");
      data_test::write_jpg(path, k.w, k.h, 3, photo(k.w, k.h, 3), k.quality);
      // The reduced scale is what the decoder really used.
      const std::vector<uint8_t> bytes = data_test::read_all(path);
      std::vector<uint8_t> pixels;
      const std::optional<JpegDecoded> jpeg =
          decode_jpeg(path, bytes.data(), bytes.size(), channels, k.target_h, k.target_w, pixels);
      REQUIRE(jpeg.has_value());
      REQUIRE(jpeg->scale == k.scale);
      REQUIRE(jpeg->width == k.scaled_w);
      REQUIRE(jpeg->height == k.scaled_h);
      REQUIRE(jpeg->full_width == k.w);
      REQUIRE(jpeg->full_height == k.h);
      REQUIRE(pixels.size() == static_cast<size_t>(k.scaled_w * k.scaled_h * channels));

      const double mad = mean_abs_diff(decode(path, channels, k.target_h, k.target_w),
                                       full_decode_then_shrink(path, channels, k.target_h, k.target_w));
      CAPTURE(mad);
      REQUIRE(mad <= k.max_mad);
    }
}

TEST_CASE("jpeg: grey is decoded straight to the JPEG's luma", "[data][jpeg]") {
  TempDir dir;
  const std::string path = dir / "c.jpg";
  data_test::write_jpg(path, 80, 60, 3, photo(80, 60, 3), 95);
  const std::vector<uint8_t> grey = decode(path, 1, 20, 30), rgb = decode(path, 3, 20, 30);
  const size_t plane = 20 * 30;
  std::vector<uint8_t> luma(plane);
  for (size_t i = 0; i < plane; ++i)
    luma[i] = static_cast<uint8_t>(std::lround(0.299 * rgb[i] + 0.587 * rgb[plane + i] + 0.114 * rgb[2 * plane + i]));
  REQUIRE(mean_abs_diff(grey, luma) < 1.0);
}

TEST_CASE("jpeg: the file's bytes choose the decoder, not its name, and CMYK goes to stb_image", "[data][jpeg]") {
  TempDir dir;
  data_test::write_png(dir / "a/png_named.jpg", 12, 8, 3,
                       data_test::make_image(12, 8, 3, [](int, int, int c) { return 40 + 50 * c; }));
  data_test::write_jpg(dir / "a/jpeg_named.png", 12, 8, 3,
                       data_test::make_image(12, 8, 3, [](int, int, int c) { return 200 - 50 * c; }));
  for (const auto& [name, level] : {std::pair{"a/png_named.jpg", 40}, std::pair{"a/jpeg_named.png", 200}}) {
    const std::vector<uint8_t> px = decode(dir / name, 3, 4, 6);
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 24; ++i) REQUIRE(std::abs(px[c * 24 + i] - (level + (level == 40 ? 50 : -50) * c)) <= 2);
  }

  // A CMYK JPEG (written by TurboJPEG itself): libjpeg-turbo would give only CMYK back.
  const int w = 16, h = 16;
  std::vector<uint8_t> cmyk(w * h * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = static_cast<uint8_t>(i % 4 == 0 ? 30 : 220);
  tjhandle tj = tjInitCompress();
  REQUIRE(tj != nullptr);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(tj, cmyk.data(), w, 0, h, TJPF_CMYK, &jpeg, &size, TJSAMP_444, 95, 0) == 0);
  data_test::write_bytes(dir / "a/cmyk.jpg", std::vector<uint8_t>(jpeg, jpeg + size));
  tjFree(jpeg);
  tjDestroy(tj);
  std::vector<uint8_t> pixels;
  const std::vector<uint8_t> bytes = data_test::read_all(dir / "a/cmyk.jpg");
  REQUIRE_FALSE(decode_jpeg(dir / "a/cmyk.jpg", bytes.data(), bytes.size(), 3, 8, 8, pixels).has_value());
  // stb_image decodes it instead: exactly what stb_image and the shrink give, one flat colour.
  const std::vector<uint8_t> px = decode(dir / "a/cmyk.jpg", 3, 8, 8);
  REQUIRE(px == full_decode_then_shrink(dir / "a/cmyk.jpg", 3, 8, 8));
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 64; ++i) REQUIRE(std::abs(px[c * 64 + i] - px[c * 64]) <= 2);
}

TEST_CASE("jpeg: a corrupt or cut-short JPEG is an error naming it, or skipped, and the next image decodes",
          "[data][jpeg]") {
  TempDir dir;
  for (int i = 0; i < 4; ++i)
    data_test::write_jpg(dir / ("a/" + std::to_string(i) + ".jpg"), 64, 48, 3, photo(64, 48, 3));
  const std::vector<uint8_t> good = data_test::read_all(dir / "a/0.jpg");
  REQUIRE(good.size() > 1000);

  SECTION("an undecodable header fails when the folder is opened") {
    const std::string bad = dir / "a/garbage.jpg";
    std::vector<uint8_t> garbage = {0xFF, 0xD8, 0xFF};
    for (int i = 0; i < 100; ++i) garbage.push_back(static_cast<uint8_t>(i * 37));
    data_test::write_bytes(bad, garbage);
    REQUIRE_THROWS_WITH(ImageFolder(dir.str(), options(3, 16)), Catch::Contains("cannot decode image " + bad));
    ImageFolderOptions skip = options(3, 16);
    skip.skip_bad_images = true;
    ImageFolder folder(dir.str(), skip);
    REQUIRE(folder.size() == 4);
    REQUIRE_THAT(folder.skipped().summary(), Catch::Contains(bad));
    REQUIRE_THROWS_WITH(decode(bad, 3, 16, 16), Catch::Contains("cannot decode image " + bad));
  }

  SECTION("cut inside a table or the scan: the header passes, the read fails") {
    const std::string table_cut = dir / "a/1.jpg", scan_cut = dir / "a/2.jpg";
    data_test::write_bytes(table_cut, std::vector<uint8_t>(good.begin(), good.begin() + 200));
    data_test::write_bytes(scan_cut, std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2));
    auto folder = std::make_shared<ImageFolder>(dir.str(), options(3, 16));
    REQUIRE(folder->size() == 4);
    const std::vector<float> first = read(*folder, 0);
    REQUIRE_THROWS_WITH(read(*folder, 1), Catch::Contains("cannot decode image " + table_cut));
    // The thread's decompressor survives a failed header: the same image again, then a good one.
    REQUIRE_THROWS_WITH(read(*folder, 1), Catch::Contains("cannot decode image " + table_cut));
    REQUIRE(read(*folder, 0) == first);
    REQUIRE_THROWS_WITH(read(*folder, 2), Catch::Contains("cannot decode image " + scan_cut) &&
                                              Catch::Contains("Premature end of JPEG file"));
    REQUIRE(read(*folder, 0) == first);

    LoaderConfig config;
    config.batch_size = 4;
    config.shuffle = false;
    config.normalize = false;
    config.threads = 2;
    config.skip_bad_images = true;
    Loader lenient(folder, config);
    lenient.start_epoch(0, 0);
    HostBatch batch;
    REQUIRE(lenient.next(batch));
    REQUIRE(batch.count == 2);
    REQUIRE_FALSE(lenient.next(batch));
    REQUIRE(lenient.skipped().count == 2);
    REQUIRE_THAT(lenient.skipped().summary(), Catch::Contains(table_cut) && Catch::Contains(scan_cut));
  }

  SECTION("zero bytes") {
    const std::string empty = dir / "a/empty.jpg";
    data_test::write_bytes(empty, {});
    REQUIRE_THROWS_WITH(decode(empty, 1, 8, 8), Catch::Contains("zero-byte image " + empty));
    REQUIRE_THROWS_WITH(decode(dir / "a/missing.jpg", 1, 8, 8),
                        Catch::Contains("image " + (dir / "a/missing.jpg") + ": cannot open"));
  }
}
