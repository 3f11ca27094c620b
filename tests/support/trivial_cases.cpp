#include "support/trivial_cases.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>

#include "data/augment.h"
#include "kernels/trivial_augment_math.h"
#include "support/golden_files.h"
#include "training/safetensors.h"

namespace lockstep::testing {

namespace {

const char* const kOpNames[kTrivialOps] = {"Identity",   "ShearX",    "ShearY",   "TranslateX", "TranslateY",
                                           "Rotate",     "Brightness", "Color",   "Contrast",   "Sharpness",
                                           "Posterize",  "Solarize",  "AutoContrast", "Equalize"};

std::vector<uint8_t> as_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> out;
  for (float v : values) {
    REQUIRE((v >= 0.0f && v <= 255.0f && v == std::floor(v)));
    out.push_back(static_cast<uint8_t>(v));
  }
  return out;
}

TrivialImages load() {
  const SafetensorsFile file = read_safetensors(golden_file("trivial_augment.safetensors"));
  TrivialImages out;
  const int64_t images = std::stoll(file.metadata.at("images"));
  for (int64_t i = 0; i < images; ++i) {
    const std::string key = "image" + std::to_string(i);
    const HostTensor& image = file.at(key);
    const HostTensor& cases = file.at(key + ".cases");
    const HostTensor& results = file.at(key + ".out");
    const Shape& shape = image.shape;
    out.shapes.push_back(shape);
    out.images.push_back(as_bytes(image.values));
    const int64_t per_image = shape.numel();
    for (int64_t k = 0; k < cases.shape[0]; ++k) {
      const float* row = cases.values.data() + k * 4;
      TrivialCase c;
      c.image = i;
      const int32_t op = static_cast<int32_t>(row[0]), bin = static_cast<int32_t>(row[1]);
      const bool negative = row[2] != 0.0f;
      data::set_trivial_operation(c.draw, op, bin, negative, shape[1], shape[2]);
      c.torch_magnitude = static_cast<double>(row[3]);
      c.name = "image " + std::to_string(i) + ", " + kOpNames[op] + " bin " + std::to_string(bin) +
               (negative ? " negative" : "");
      const auto first = results.values.begin() + k * per_image;
      c.expected = as_bytes(std::vector<float>(first, first + per_image));
      out.cases.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace

const TrivialImages& trivial_images() {
  static const TrivialImages images = load();
  return images;
}

ByteDifference byte_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  REQUIRE(a.size() == b.size());
  ByteDifference d;
  for (size_t i = 0; i < a.size(); ++i) {
    const int diff = std::abs(int(a[i]) - int(b[i]));
    d.largest = std::max(d.largest, diff);
    d.count += diff != 0;
  }
  return d;
}

std::vector<uint8_t> bytes_of(const std::vector<float>& values) {
  std::vector<uint8_t> out;
  for (float v : values) {
    const long byte = std::lround(v * 255.0f);
    REQUIRE((byte >= 0 && byte <= 255 && pixel_value(static_cast<uint8_t>(byte)) == v));
    out.push_back(static_cast<uint8_t>(byte));
  }
  return out;
}

}  // namespace lockstep::testing
