#pragma once
// The shape of a tensor: up to four extents, NCHW order for images.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace lockstep {

class Shape {
public:
  static constexpr int max_rank = 4;

  Shape() = default;
  Shape(std::initializer_list<int64_t> extents);

  int rank() const { return rank_; }
  int64_t operator[](int axis) const { return dims_[axis]; }
  int64_t& operator[](int axis) { return dims_[axis]; }
  // Throws lockstep::Error naming the shape when the product overflows int64_t.
  int64_t numel() const;
  // Elements per item of the leading (batch) axis (checked as numel is).
  int64_t per_sample() const;
  Shape with_batch(int64_t n) const;
  std::string str() const;  // "[2, 3, 5, 5]"
  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }

private:
  std::array<int64_t, max_rank> dims_{};
  int rank_ = 0;
};

// "3x32x32": one image's channels, height and width, positive and joined by
// 'x' (the --input of the programs), as Shape{3, 32, 32}; nullopt when `text`
// is not that, so the caller words the error for its option.
std::optional<Shape> parse_chw(const std::string& text);

}  // namespace lockstep
