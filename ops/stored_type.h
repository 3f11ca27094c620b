#pragma once
// The stored type of an op's activations (kernels/stored_type.h): after
// check_stored (ops/checks.h) has made sure the tensors agree, the typed
// pointers that pick a kernel's float or bf16 instantiation:
//
//   const DType dtype = check_stored(op, ctx, {&x, &y});
//   ... LS_CUDA_TWIN(gpu, { with_stored_type(dtype, [&](auto tag) {
//         using T = decltype(tag);
//         cuda::relu_forward(gpu.compute_stream, elems<T>(x), elems<T>(y), n);
//       }); })
#include "base/error.h"
#include "kernels/bf16_math.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// The elements of `t` as T (float: f32, bf16_bits: bf16), mutable: the op's
// signature says which tensors it writes.
template <typename T> T* elems(const Tensor& t) {
  constexpr DType expected = sizeof(T) == 2 ? DType::bf16 : DType::f32;
  LS_CHECK(t.dtype() == expected, "tensor of ", dtype_name(t.dtype()), " read as ", dtype_name(expected));
  return static_cast<T*>(t.raw());
}
// The same for an optional tensor: null stays null.
template <typename T> T* elems(const Tensor* t) { return t ? elems<T>(*t) : nullptr; }

// f(T{}) with T the stored type of `dtype` (f32 or bf16, as check_stored returns).
template <typename F> decltype(auto) with_stored_type(DType dtype, F&& f) {
  if (dtype == DType::bf16) return f(bf16_bits{});
  return f(float{});
}

}  // namespace lockstep::ops
