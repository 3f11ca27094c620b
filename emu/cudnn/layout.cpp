#include "emu/cudnn/layout.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/bf16_math.h"

namespace lockstep::emu::cudnn {

namespace {

// The strided walk both directions share: f(element of the layout, index in packed order).
template <typename T, typename F> void walk(const cudnnTensorStruct& t, T* base, F&& f) {
  const int* d = t.dims;
  const int* s = t.strides;
  int64_t i = 0;
  for (int n = 0; n < d[0]; ++n)
    for (int c = 0; c < d[1]; ++c)
      for (int h = 0; h < d[2]; ++h) {
        T* row = base + int64_t(n) * s[0] + int64_t(c) * s[1] + int64_t(h) * s[2];
        for (int w = 0; w < d[3]; ++w) f(row[int64_t(w) * s[3]], i++);
      }
}

}  // namespace

void gather(const cudnnTensorStruct& t, const void* src, float* packed) {
  if (t.type == CUDNN_DATA_BFLOAT16)
    walk(t, static_cast<const lockstep::bf16_bits*>(src),
         [&](lockstep::bf16_bits v, int64_t i) { packed[i] = lockstep::bf16_to_float(v); });
  else
    walk(t, static_cast<const float*>(src), [&](float v, int64_t i) { packed[i] = v; });
}

void blend(const cudnnTensorStruct& t, const float* packed, float alpha, float beta, void* dst) {
  if (t.type == CUDNN_DATA_BFLOAT16) {
    walk(t, static_cast<lockstep::bf16_bits*>(dst), [&](lockstep::bf16_bits& out, int64_t i) {
      const float v = alpha * packed[i];
      out = lockstep::float_to_bf16(beta == 0.0f ? v : v + beta * lockstep::bf16_to_float(out));
    });
  } else {
    walk(t, static_cast<float*>(dst), [&](float& out, int64_t i) {
      const float v = alpha * packed[i];
      out = beta == 0.0f ? v : v + beta * out;
    });
  }
}

bool self_overlapping(const cudnnTensorStruct& t) {
  // Sorted by stride, each axis must step past everything the smaller ones span.
  std::pair<int64_t, int64_t> axes[4];  // (stride, extent)
  for (int i = 0; i < 4; ++i) axes[i] = {t.strides[i], t.dims[i]};
  std::sort(axes, axes + 4);
  int64_t span = 1;  // elements covered by the axes so far
  for (auto [stride, extent] : axes) {
    if (extent == 1) continue;
    if (stride < span) return true;
    span = stride * (extent - 1) + span;
  }
  return false;
}

bool ranges_overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return a_bytes && b_bytes && pa < pb + b_bytes && pb < pa + a_bytes;
}

cudnnTensorStruct filter_as_tensor(const cudnnFilterStruct& f) {
  const int k = f.dims[0], c = f.dims[1], h = f.dims[2], w = f.dims[3];
  (void)k;
  cudnnTensorStruct t{true, f.type, {f.dims[0], c, h, w}, {c * h * w, h * w, w, 1}};
  if (f.format == CUDNN_TENSOR_NHWC) {
    t.strides[0] = h * w * c, t.strides[1] = 1, t.strides[2] = w * c, t.strides[3] = c;
  }
  return t;
}

}  // namespace lockstep::emu::cudnn
