#include "runtime/shape.h"

#include <sstream>

#include "base/error.h"

namespace lockstep {

Shape::Shape(std::initializer_list<int64_t> extents) {
  LS_CHECK(extents.size() <= max_rank, "a shape has at most ", max_rank, " axes, got ", extents.size());
  for (int64_t e : extents) {
    LS_CHECK(e >= 0, "negative extent ", e, " in a shape");
    dims_[rank_++] = e;
  }
}

namespace {
// The product of extents [first, rank); throws naming the shape when it does
// not fit in int64_t (extents come from files and arguments).
int64_t checked_product(const Shape& shape, int first) {
  int64_t n = 1;
  for (int i = first; i < shape.rank(); ++i)
    LS_CHECK(!__builtin_mul_overflow(n, shape[i], &n), "shape ", shape.str(),
             " has more elements than fit in 64 bits");
  return n;
}
}  // namespace

int64_t Shape::numel() const { return rank_ == 0 ? 0 : checked_product(*this, 0); }

int64_t Shape::per_sample() const { return checked_product(*this, 1); }

Shape Shape::with_batch(int64_t n) const {
  Shape s = *this;
  s.dims_[0] = n;
  return s;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
  return s + "]";
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != other.dims_[i]) return false;
  return true;
}

std::optional<Shape> parse_chw(const std::string& text) {
  int64_t c = 0, h = 0, w = 0;
  char x1 = 0, x2 = 0;
  std::istringstream in(text);
  in >> c >> x1 >> h >> x2 >> w;
  if (in.fail() || x1 != 'x' || x2 != 'x' || c <= 0 || h <= 0 || w <= 0) return std::nullopt;
  if (in.peek() != std::char_traits<char>::eof()) return std::nullopt;  // "3x8x8x8", "3x8x8px"
  return Shape{c, h, w};
}

}  // namespace lockstep
