#pragma once
// Tensor: a typed view (element offset + shape) into a ref-counted storage on
// one device. Views share storage: copying a Tensor never copies data.
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/memory_format.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/shape.h"

namespace lockstep {

// bf16 elements are the raw bits of a bfloat16 (kernels/bf16_math.h), two
// bytes each: precision bf16's copy of the weights (runtime/arena.h). u8
// holds bytes: decoded images on their way to augmentation (ops/augment.h),
// which cross to a GPU at a quarter of their size as floats, and the
// augmentation draws as the bytes of their structs. A dtype rather than raw
// pointers, so they are allocated, copied, viewed by sample and checked for
// device and shape as every other tensor is.
enum class DType { f32, i32, bf16, u8 };
const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);  // bytes per element

// A block of memory from an allocator, returned to it when the last view goes.
struct Storage {
  Storage(size_t bytes, std::shared_ptr<Allocator> allocator);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* ptr = nullptr;
  size_t bytes = 0;
  std::shared_ptr<Allocator> allocator;
};

class Tensor {
public:
  Tensor() = default;
  static Tensor empty(const Shape& shape, Device device = Device::cpu(), DType dtype = DType::f32);
  static Tensor empty_with(const Shape& shape, std::shared_ptr<Allocator> allocator, DType dtype = DType::f32);
  static Tensor zeros(const Shape& shape, Device device = Device::cpu(), DType dtype = DType::f32);
  static Tensor from_vector(const Shape& shape, const std::vector<float>& values, Device device = Device::cpu());
  static Tensor from_labels(const std::vector<int32_t>& labels, Device device = Device::cpu());
  static Tensor from_bytes(const Shape& shape, const std::vector<uint8_t>& bytes, Device device = Device::cpu());
  // A bf16 tensor holding `values` rounded to bf16 (to nearest, ties to even).
  static Tensor from_vector_bf16(const Shape& shape, const std::vector<float>& values, Device device = Device::cpu());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  int64_t dim(int axis) const { return shape_[axis]; }
  // How the elements lie (kernels/memory_format.h); nchw unless relabelled.
  MemoryFormat format() const { return format_; }
  // The same storage relabelled as `format` (no data moves): for a tensor
  // just allocated, or one whose elements are known to lie that way. nhwc
  // needs a rank-4 shape. ops::convert_format moves the data.
  Tensor with_format(MemoryFormat format) const;

  float* data();
  const float* data() const;
  int32_t* labels();
  const int32_t* labels() const;
  uint16_t* bf16_data();  // the bits of each bf16 element
  const uint16_t* bf16_data() const;
  uint8_t* u8_data();
  const uint8_t* u8_data() const;
  void* raw() const;

  // A view of `shape` starting `offset` elements into this one. An nhwc
  // tensor's views keep the tag and must be whole samples of the same
  // [C, H, W] (a sample is contiguous in nhwc too, so batch_slice works);
  // any other view or reshape of it throws, since its elements would be
  // read in the wrong order.
  Tensor view(int64_t offset, const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  // Samples [start, start + count) of the leading axis.
  Tensor batch_slice(int64_t start, int64_t count) const;

  // Copies every element from `src` (same element count, dtype and memory
  // format, any device). Between formats it throws rather than converting:
  // a conversion is a kernel on a stream (ops::convert_format), not a copy.
  void copy_from(const Tensor& src);
  void zero();
  Tensor to(Device device) const;
  // The elements in stored order (an nhwc tensor's channels innermost): f32,
  // or bf16 widened to float (exactly).
  std::vector<float> to_vector() const;
  std::vector<int32_t> to_label_vector() const;

private:
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;
  Shape shape_;
  Device device_;
  DType dtype_ = DType::f32;
  MemoryFormat format_ = MemoryFormat::nchw;
};

}  // namespace lockstep
