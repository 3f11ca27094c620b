#pragma once
// Helpers for the data tests: a temporary folder, small IDX/CIFAR files and
// PNG/JPEG images written on the spot.
#include <stb/stb_image_write.h>
#include <zlib.h>

#include "data/open_dataset.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace data_test {
namespace fs = std::filesystem;

// A fresh folder under the system's temp folder, removed with everything in it.
class TempDir {
public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("lockstep_data_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
  fs::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(file) == Z_OK);
}

inline void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

// An IDX images file: n images of h x w, pixel (i, y, x) = pixel(i, y, x).
template <typename F> std::vector<uint8_t> idx_images(uint32_t n, uint32_t h, uint32_t w, F pixel) {
  std::vector<uint8_t> out;
  put_be32(out, 0x00000803);
  put_be32(out, n);
  put_be32(out, h);
  put_be32(out, w);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t y = 0; y < h; ++y)
      for (uint32_t x = 0; x < w; ++x) out.push_back(static_cast<uint8_t>(pixel(i, y, x)));
  return out;
}

inline std::vector<uint8_t> idx_labels(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> out;
  put_be32(out, 0x00000801);
  put_be32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

// An image of w x h with `channels` channels whose value at (y, x, c) is f(y, x, c).
template <typename F> std::vector<uint8_t> make_image(int w, int h, int channels, F f) {
  std::vector<uint8_t> pixels(static_cast<size_t>(w * h * channels));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c) pixels[(y * w + x) * channels + c] = static_cast<uint8_t>(f(y, x, c));
  return pixels;
}

inline void write_png(const std::string& path, int w, int h, int channels, const std::vector<uint8_t>& pixels) {
  fs::create_directories(fs::path(path).parent_path());
  REQUIRE(stbi_write_png(path.c_str(), w, h, channels, pixels.data(), w * channels) != 0);
}

inline void write_jpg(const std::string& path, int w, int h, int channels, const std::vector<uint8_t>& pixels,
                      int quality = 95) {
  fs::create_directories(fs::path(path).parent_path());
  REQUIRE(stbi_write_jpg(path.c_str(), w, h, channels, pixels.data(), quality) != 0);
}

inline std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Fashion-MNIST: $LOCKSTEP_FASHION_MNIST when set (the GPU kit's subset),
// else Debian's dataset-fashion-mnist, which scripts/setup installs.
inline std::string fashion_mnist_dir() {
  const std::string dir = lockstep::data::default_data_path();
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                           "t10k-labels-idx1-ubyte.gz"})
    if (!fs::exists(fs::path(dir) / name))
      FAIL("Fashion-MNIST is missing: " << (fs::path(dir) / name).string()
                                         << " not found; install Debian's dataset-fashion-mnist (scripts/setup) or set LOCKSTEP_FASHION_MNIST");
  return dir;
}

}  // namespace data_test
