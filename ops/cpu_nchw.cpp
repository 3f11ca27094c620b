#include "ops/cpu_nchw.h"

#include "base/error.h"
#include "kernels/cpu/transpose_cpu.h"

namespace lockstep::ops {

namespace {

// Per sample, NCHW is a [C, H*W] matrix and NHWC its transpose.
void convert(const Tensor& src, Tensor& dst) {
  const int64_t n = src.dim(0), c = src.dim(1), spatial = src.dim(2) * src.dim(3);
  if (dst.format() == MemoryFormat::nhwc)
    cpu::transpose_planes(src.data(), dst.data(), n, c, spatial);
  else
    cpu::transpose_planes(src.data(), dst.data(), n, spatial, c);
}

Tensor nchw_copy(const Tensor& t) {
  LS_CHECK(t.device().is_cpu(), "CpuNchw: a tensor on ", t.device().str());
  Tensor copy = Tensor::empty(t.shape(), Device::cpu());
  convert(t, copy);
  return copy;
}

}  // namespace

const float* CpuNchw::in(const Tensor& t) {
  if (t.format() == MemoryFormat::nchw) return t.data();
  inputs_.push_back(nchw_copy(t));
  return inputs_.back().data();
}

float* CpuNchw::out(Tensor& t, bool read) {
  if (t.format() == MemoryFormat::nchw) return t.data();
  Tensor copy = read ? nchw_copy(t) : Tensor::empty(t.shape(), Device::cpu());
  outputs_.emplace_back(&t, copy);
  return copy.data();
}

void CpuNchw::finish() {
  for (auto& [tensor, copy] : outputs_) convert(copy, *tensor);
  outputs_.clear();
  inputs_.clear();
}

}  // namespace lockstep::ops
