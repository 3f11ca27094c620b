#include "runtime/tensor.h"

#include "base/error.h"
#include "kernels/bf16_math.h"
#include "runtime/memory.h"

namespace lockstep {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::i32: return "i32";
    case DType::bf16: return "bf16";
    case DType::u8: return "u8";
  }
  return "unknown";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::bf16: return 2;
    case DType::u8: return 1;
    case DType::f32:
    case DType::i32: break;
  }
  return 4;
}

Storage::Storage(size_t size, std::shared_ptr<Allocator> alloc) : bytes(size), allocator(std::move(alloc)) {
  ptr = allocator->allocate(bytes);
}

Storage::~Storage() { allocator->deallocate(ptr, bytes); }

Tensor Tensor::empty_with(const Shape& shape, std::shared_ptr<Allocator> allocator, DType dtype) {
  Tensor t;
  t.device_ = allocator->device();
  t.storage_ = std::make_shared<Storage>(std::max<size_t>(shape.numel(), 1) * dtype_size(dtype), std::move(allocator));
  t.shape_ = shape;
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::empty(const Shape& shape, Device device, DType dtype) {
  return empty_with(shape, allocator_for(device), dtype);
}

Tensor Tensor::zeros(const Shape& shape, Device device, DType dtype) {
  Tensor t = empty(shape, device, dtype);
  t.zero();
  return t;
}

Tensor Tensor::from_vector(const Shape& shape, const std::vector<float>& values, Device device) {
  LS_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
           " values for shape ", shape.str());
  Tensor t = empty(shape, device);
  copy_bytes(t.raw(), device, values.data(), Device::cpu(), t.bytes());
  return t;
}

Tensor Tensor::from_vector_bf16(const Shape& shape, const std::vector<float>& values, Device device) {
  LS_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector_bf16: ", values.size(),
           " values for shape ", shape.str());
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = float_to_bf16(values[i]);
  Tensor t = empty(shape, device, DType::bf16);
  copy_bytes(t.raw(), device, bits.data(), Device::cpu(), t.bytes());
  return t;
}

Tensor Tensor::from_labels(const std::vector<int32_t>& labels, Device device) {
  Tensor t = empty(Shape{static_cast<int64_t>(labels.size())}, device, DType::i32);
  copy_bytes(t.raw(), device, labels.data(), Device::cpu(), t.bytes());
  return t;
}

Tensor Tensor::from_bytes(const Shape& shape, const std::vector<uint8_t>& bytes, Device device) {
  LS_CHECK(static_cast<int64_t>(bytes.size()) == shape.numel(), "from_bytes: ", bytes.size(), " bytes for shape ",
           shape.str());
  Tensor t = empty(shape, device, DType::u8);
  copy_bytes(t.raw(), device, bytes.data(), Device::cpu(), t.bytes());
  return t;
}

void* Tensor::raw() const {
  LS_CHECK(defined(), "use of an undefined tensor");
  return static_cast<char*>(storage_->ptr) + offset_ * dtype_size(dtype_);
}

float* Tensor::data() {
  LS_CHECK(dtype_ == DType::f32, "tensor of ", dtype_name(dtype_), " read as f32");
  return static_cast<float*>(raw());
}
const float* Tensor::data() const { return const_cast<Tensor*>(this)->data(); }

int32_t* Tensor::labels() {
  LS_CHECK(dtype_ == DType::i32, "tensor of ", dtype_name(dtype_), " read as i32");
  return static_cast<int32_t*>(raw());
}
const int32_t* Tensor::labels() const { return const_cast<Tensor*>(this)->labels(); }

uint16_t* Tensor::bf16_data() {
  LS_CHECK(dtype_ == DType::bf16, "tensor of ", dtype_name(dtype_), " read as bf16");
  return static_cast<uint16_t*>(raw());
}
const uint16_t* Tensor::bf16_data() const { return const_cast<Tensor*>(this)->bf16_data(); }

uint8_t* Tensor::u8_data() {
  LS_CHECK(dtype_ == DType::u8, "tensor of ", dtype_name(dtype_), " read as u8");
  return static_cast<uint8_t*>(raw());
}
const uint8_t* Tensor::u8_data() const { return const_cast<Tensor*>(this)->u8_data(); }

Tensor Tensor::with_format(MemoryFormat format) const {
  LS_CHECK(format == MemoryFormat::nchw || shape_.rank() == 4, "a ", memory_format_name(format),
           " tensor must be [N, C, H, W], got ", shape_.str());
  Tensor t = *this;
  t.format_ = format;
  return t;
}

Tensor Tensor::view(int64_t offset, const Shape& shape) const {
  LS_CHECK(defined(), "view of an undefined tensor");
  LS_CHECK(format_ == MemoryFormat::nchw ||
               (shape.rank() == 4 && shape[1] == shape_[1] && shape[2] == shape_[2] && shape[3] == shape_[3] &&
                (shape_.per_sample() == 0 || offset % shape_.per_sample() == 0)),
           "view of ", shape.str(), " at element ", offset, " of the nhwc tensor ", shape_.str(),
           ": only whole samples of an nhwc tensor can be viewed (convert it to nchw first)");
  LS_CHECK(offset >= 0 && (offset_ + offset + shape.numel()) * static_cast<int64_t>(dtype_size(dtype_)) <=
                              static_cast<int64_t>(storage_->bytes),
           "view of ", shape.str(), " at element ", offset, " runs past the storage of ", shape_.str());
  Tensor t = *this;
  t.offset_ = offset_ + offset;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
  LS_CHECK(shape.numel() == numel(), "reshape of ", shape_.str(), " to ", shape.str(), " changes the element count");
  return view(0, shape);
}

Tensor Tensor::batch_slice(int64_t start, int64_t count) const {
  LS_CHECK(shape_.rank() >= 1 && start >= 0 && count >= 0 && start + count <= shape_[0], "batch slice [", start,
           ", ", start + count, ") of ", shape_.str());
  return view(start * shape_.per_sample(), shape_.with_batch(count));
}

void Tensor::copy_from(const Tensor& src) {
  LS_CHECK(src.numel() == numel() && src.dtype_ == dtype_, "copy of ", src.shape_.str(), " ",
           dtype_name(src.dtype_), " into ", shape_.str(), " ", dtype_name(dtype_));
  LS_CHECK(src.format_ == format_, "copy of an ", memory_format_name(src.format_), " tensor ", src.shape_.str(),
           " into an ", memory_format_name(format_), " one: copies keep the memory format; convert with "
           "ops::convert_format");
  copy_bytes(raw(), device_, src.raw(), src.device_, bytes());
}

void Tensor::zero() {
  if (numel() > 0) zero_bytes(raw(), device_, bytes());
}

Tensor Tensor::to(Device device) const {
  Tensor t = empty(shape_, device, dtype_).with_format(format_);
  t.copy_from(*this);
  return t;
}

std::vector<float> Tensor::to_vector() const {
  std::vector<float> out(numel());
  LS_CHECK(dtype_ == DType::f32 || dtype_ == DType::bf16, "to_vector of an ", dtype_name(dtype_), " tensor");
  if (dtype_ == DType::bf16) {
    std::vector<uint16_t> bits(numel());
    copy_bytes(bits.data(), Device::cpu(), raw(), device_, bytes());
    for (size_t i = 0; i < bits.size(); ++i) out[i] = bf16_to_float(bits[i]);
    return out;
  }
  copy_bytes(out.data(), Device::cpu(), raw(), device_, bytes());
  return out;
}

std::vector<int32_t> Tensor::to_label_vector() const {
  std::vector<int32_t> out(numel());
  LS_CHECK(dtype_ == DType::i32, "to_label_vector of an ", dtype_name(dtype_), " tensor");
  copy_bytes(out.data(), Device::cpu(), raw(), device_, bytes());
  return out;
}

}  // namespace lockstep
