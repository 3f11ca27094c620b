#include "bench/support/photo_folder.h"

#include <stb/stb_image_write.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "base/error.h"
#include "data/random.h"

namespace fs = std::filesystem;

namespace lockstep::bench {

int64_t write_photo_folder(const std::string& root, int count, int width, int height, const data::Dataset& source) {
  const Shape shape = source.sample_shape();
  const int64_t sh = shape[1], sw = shape[2], plane = sh * sw;
  std::vector<float> sample(static_cast<size_t>(shape.numel()));
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 3);
  data::Rng rng(2025);
  int64_t bytes = 0;
  for (int i = 0; i < count; ++i) {
    const int64_t index = i % source.size();
    source.read(index, sample.data());
    // The first channel, scaled to [0, 1] whatever the data set's range.
    const auto [lo, hi] = std::minmax_element(sample.begin(), sample.begin() + plane);
    const float range = std::max(*hi - *lo, 1e-6f);
    const int32_t cls = source.label(index);
    const float tint[3] = {0.55f + 0.045f * static_cast<float>(cls % 10), 0.9f - 0.06f * static_cast<float>(cls % 7),
                           0.4f + 0.1f * static_cast<float>(cls % 5)};
    for (int y = 0; y < height; ++y) {
      const float fy = std::clamp((static_cast<float>(y) + 0.5f) * static_cast<float>(sh) / height - 0.5f, 0.0f,
                                  static_cast<float>(sh - 1));
      const int64_t y0 = static_cast<int64_t>(fy), y1 = std::min(y0 + 1, sh - 1);
      const float ty = fy - static_cast<float>(y0);
      for (int x = 0; x < width; ++x) {
        const float fx = std::clamp((static_cast<float>(x) + 0.5f) * static_cast<float>(sw) / width - 0.5f, 0.0f,
                                    static_cast<float>(sw - 1));
        const int64_t x0 = static_cast<int64_t>(fx), x1 = std::min(x0 + 1, sw - 1);
        const float tx = fx - static_cast<float>(x0);
        auto at = [&](int64_t yy, int64_t xx) { return (sample[yy * sw + xx] - *lo) / range; };
        const float top = at(y0, x0) + tx * (at(y0, x1) - at(y0, x0));
        const float bottom = at(y1, x0) + tx * (at(y1, x1) - at(y1, x0));
        const float v = top + ty * (bottom - top);
        const float gradient = 0.25f * static_cast<float>(x + y) / static_cast<float>(width + height);
        for (int c = 0; c < 3; ++c) {
          const float value = 255.0f * (0.15f + 0.6f * v * tint[c] + gradient) + static_cast<float>(rng.below(24));
          pixels[(static_cast<size_t>(y) * width + x) * 3 + c] = static_cast<uint8_t>(std::clamp(value, 0.0f, 255.0f));
        }
      }
    }
    const fs::path dir = fs::path(root) / ("class" + std::to_string(cls));
    fs::create_directories(dir);
    char name[32];
    std::snprintf(name, sizeof name, "%06d.jpg", i);
    const fs::path file = dir / name;
    LS_CHECK(stbi_write_jpg(file.c_str(), width, height, 3, pixels.data(), 90) != 0, "bench: cannot write ",
             file.string());
    bytes += static_cast<int64_t>(fs::file_size(file));
  }
  return bytes;
}

}  // namespace lockstep::bench
