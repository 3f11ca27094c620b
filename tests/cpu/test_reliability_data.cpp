// Hostile data files: bombs (images declaring billions of pixels, gzip files
// longer than their header), files that are not regular files, sizes that
// overflow. Each must end in one lockstep::Error naming the file.
#include <sys/stat.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "base/error.h"
#include "data/file_bytes.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "test_data_util.h"

using namespace lockstep;
using namespace lockstep::data;
using Catch::Matchers::Contains;
using data_test::TempDir;

namespace {

void put_be32_at(std::vector<uint8_t>& bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

void append_png_chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  data_test::put_be32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  data_test::put_be32(out, static_cast<uint32_t>(crc32(0, out.data() + start, static_cast<uInt>(out.size() - start))));
}

// A PNG of a few hundred bytes whose header declares width x height grey pixels
// (its image data holds one row of zeros; stb_image itself refuses above 2^30 bytes).
std::vector<uint8_t> png_declaring(uint32_t width, uint32_t height) {
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> ihdr;
  data_test::put_be32(ihdr, width);
  data_test::put_be32(ihdr, height);
  ihdr.insert(ihdr.end(), {8, 0, 0, 0, 0});  // 8 bits, grey
  append_png_chunk(out, "IHDR", ihdr);
  std::vector<uint8_t> row(1 + size_t{width}, 0);
  std::vector<uint8_t> packed(compressBound(static_cast<uLong>(row.size())));
  uLongf packed_size = static_cast<uLongf>(packed.size());
  REQUIRE(compress(packed.data(), &packed_size, row.data(), static_cast<uLong>(row.size())) == Z_OK);
  packed.resize(packed_size);
  append_png_chunk(out, "IDAT", packed);
  append_png_chunk(out, "IEND", {});
  return out;
}

// A real 16x16 JPEG whose frame header (SOF0) is patched to declare width x height.
std::vector<uint8_t> jpeg_declaring(const TempDir& dir, uint16_t width, uint16_t height) {
  const std::string small = dir / "small.jpg";
  data_test::write_jpg(small, 16, 16, 3, data_test::make_image(16, 16, 3, [](int y, int x, int c) { return x + y + c; }));
  std::vector<uint8_t> bytes = data_test::read_all(small);
  for (size_t i = 2; i + 9 < bytes.size(); ++i)
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xC0) {  // FF C0, length, precision, height, width
      bytes[i + 5] = static_cast<uint8_t>(height >> 8);
      bytes[i + 6] = static_cast<uint8_t>(height);
      bytes[i + 7] = static_cast<uint8_t>(width >> 8);
      bytes[i + 8] = static_cast<uint8_t>(width);
      return bytes;
    }
  FAIL("no SOF0 marker in the JPEG stb_image_write made");
  return {};
}

// A 54-byte BMP header declaring width x height 24-bit pixels, and no pixels.
std::vector<uint8_t> bmp_declaring(int32_t width, int32_t height) {
  std::vector<uint8_t> out(54, 0);
  auto le32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  out[0] = 'B';
  out[1] = 'M';
  le32(2, 54);
  le32(10, 54);
  le32(14, 40);
  le32(18, static_cast<uint32_t>(width));
  le32(22, static_cast<uint32_t>(height));
  out[26] = 1;   // planes
  out[28] = 24;  // bits per pixel
  return out;
}

// A GIF whose logical screen is width x height, with no image in it.
std::vector<uint8_t> gif_declaring(uint16_t width, uint16_t height) {
  std::vector<uint8_t> out = {'G', 'I', 'F', '8', '9', 'a'};
  out.insert(out.end(), {static_cast<uint8_t>(width), static_cast<uint8_t>(width >> 8), static_cast<uint8_t>(height),
                         static_cast<uint8_t>(height >> 8), 0, 0, 0, 0x3B});
  return out;
}

}  // namespace

TEST_CASE("bombs: PNG, JPEG, BMP and GIF declaring too many pixels are refused by their header", "[data][reliability]") {
  TempDir dir;
  const std::pair<std::string, std::vector<uint8_t>> bombs[] = {
      {"bomb.png", png_declaring(20000, 20000)},
      {"bomb.jpg", jpeg_declaring(dir, 60000, 60000)},
      {"bomb.bmp", bmp_declaring(20000, 20000)},
      {"bomb.gif", gif_declaring(60000, 60000)},
  };
  for (const auto& [name, bytes] : bombs) {
    INFO(name);
    const std::string path = dir / ("images/cat/" + name);
    data_test::write_bytes(path, bytes);
    std::vector<uint8_t> out(3 * 8 * 8);
    REQUIRE_THROWS_WITH(decode_image(path, 3, 8, 8, out.data()),
                        Contains(path) && Contains("20000x20000 = 400000000 pixels") || Contains("60000x60000"));
    REQUIRE_THROWS_WITH(decode_image(path, 3, 8, 8, out.data()), Contains("max_image_pixels") && Contains("178956970"));
  }
  // The folder scan refuses it from the header, or leaves it out with skip_bad_images.
  data_test::write_png(dir / "images/cat/fine.png", 4, 4, 3, data_test::make_image(4, 4, 3, [](int, int, int) { return 7; }));
  REQUIRE_THROWS_WITH(ImageFolder(dir / "images", {}), Contains("max_image_pixels"));
  ImageFolderOptions skip;
  skip.skip_bad_images = true;
  ImageFolder folder(dir / "images", skip);
  REQUIRE(folder.size() == 1);
  REQUIRE(folder.skipped().count == 4);
  // The setting can be lowered (or raised): a 4x4 image is above a limit of 15.
  std::vector<uint8_t> out(3 * 4 * 4);
  REQUIRE_THROWS_WITH(decode_image(dir / "images/cat/fine.png", 3, 4, 4, out.data(), 15),
                      Contains("4x4 = 16 pixels, more than the limit of 15"));
  REQUIRE_NOTHROW(decode_image(dir / "images/cat/fine.png", 3, 4, 4, out.data(), 16));
}

TEST_CASE("file reads: a FIFO, a device and a folder are refused, naming the path and what it is", "[data][reliability]") {
  TempDir dir;
  const std::string fifo = dir / "pipe.png";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::vector<uint8_t> bytes;
  // Before the fix the FIFO blocked forever and /dev/zero filled memory.
  REQUIRE_THROWS_WITH(read_plain_file(fifo, bytes, "image"), Contains(fifo) && Contains("FIFO"));
  REQUIRE_THROWS_WITH(read_file_bytes(fifo, "IDX file"), Contains(fifo) && Contains("FIFO"));
  REQUIRE_THROWS_WITH(read_plain_file("/dev/zero", bytes, "image"), Contains("/dev/zero") && Contains("character device"));
  REQUIRE_THROWS_WITH(read_file_bytes("/dev/zero", "CIFAR-10 batch"), Contains("/dev/zero") && Contains("character device"));
  REQUIRE_THROWS_WITH(read_idx(fifo, 3), Contains(fifo) && Contains("FIFO"));
  REQUIRE_THROWS_WITH(read_plain_file(dir.str(), bytes, "image"), Contains(dir.str()) && Contains("a folder"));
  std::vector<float> pixels(3 * 4 * 4);
  REQUIRE_THROWS_WITH(load_image(fifo, 3, 4, 4, pixels.data()), Contains(fifo) && Contains("FIFO"));
  REQUIRE_THROWS_WITH(read_plain_file(dir / "missing.png", bytes, "image"), Contains("missing.png: cannot open (No such file"));
  // A regular file above the bound is refused by its size.
  data_test::write_bytes(dir / "big.bin", std::vector<uint8_t>(1000, 1));
  REQUIRE_THROWS_WITH(read_plain_file(dir / "big.bin", bytes, "image", 999), Contains("more than the limit of 999"));
  REQUIRE_THROWS_WITH(read_file_bytes(dir / "big.bin", "CIFAR-10 batch", 999), Contains("more than 999 bytes"));
  REQUIRE(read_file_bytes(dir / "big.bin", "CIFAR-10 batch", 1000).size() == 1000);
}

TEST_CASE("IDX bombs: a gzip file is inflated only as far as its header says", "[data][reliability]") {
  TempDir dir;
  // 2 images of 3x3, then 64 MiB of zeros (a 64 KiB gzip file).
  std::vector<uint8_t> bytes = data_test::idx_images(2, 3, 3, [](uint32_t, uint32_t, uint32_t) { return 1; });
  const std::vector<uint8_t> exact = bytes;
  bytes.resize(bytes.size() + (size_t{64} << 20), 0);
  data_test::write_gzip(dir / "long.gz", bytes);
  REQUIRE_THROWS_WITH(read_idx(dir / "long.gz", 3), Contains(dir / "long.gz") && Contains("longer than its header says"));
  // Cut short by one byte.
  data_test::write_gzip(dir / "short.gz", std::vector<uint8_t>(exact.begin(), exact.end() - 1));
  REQUIRE_THROWS_WITH(read_idx(dir / "short.gz", 3), Contains("only 17 follow it"));
  data_test::write_gzip(dir / "exact.gz", exact);
  REQUIRE(read_idx(dir / "exact.gz", 3).values.size() == 18);
  // A header announcing more than the limit is refused before anything is inflated or allocated.
  std::vector<uint8_t> huge = exact;
  put_be32_at(huge, 4, 0xFFFFFFFFu);
  put_be32_at(huge, 8, 0xFFFFFFFFu);
  put_be32_at(huge, 12, 0xFFFFFFFFu);
  data_test::write_gzip(dir / "huge.gz", huge);
  REQUIRE_THROWS_WITH(read_idx(dir / "huge.gz", 3),
                      Contains("4294967295 x 4294967295 x 4294967295 values, more than 2^64"));
  put_be32_at(huge, 12, 1);
  data_test::write_bytes(dir / "big", huge);
  REQUIRE_THROWS_WITH(read_idx(dir / "big", 3), Contains(dir / "big") && Contains("more than the limit of"));
}
