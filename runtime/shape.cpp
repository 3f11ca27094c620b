#include "runtime/shape.h"

#include "base/error.h"

namespace lockstep {

Shape::Shape(std::initializer_list<int64_t> extents) {
  LS_CHECK(extents.size() <= max_rank, "a shape has at most ", max_rank, " axes, got ", extents.size());
  for (int64_t e : extents) {
    LS_CHECK(e >= 0, "negative extent ", e, " in a shape");
    dims_[rank_++] = e;
  }
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return rank_ == 0 ? 0 : n;
}

int64_t Shape::per_sample() const {
  int64_t n = 1;
  for (int i = 1; i < rank_; ++i) n *= dims_[i];
  return n;
}

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

}  // namespace lockstep
