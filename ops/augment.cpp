#include "ops/augment.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/error.h"
#include "kernels/cpu/augment_cpu.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/augment_cuda.h"
#endif

namespace lockstep::ops {

namespace {

// The draws cross to a GPU as their bytes.
static_assert(std::is_trivially_copyable_v<AugmentDraw>);
constexpr int64_t kDrawBytes = static_cast<int64_t>(sizeof(AugmentDraw));

// The draws' rows read as AugmentDraw structs, which needs their alignment:
// a tensor's storage is aligned for any type, so only a view at an odd row
// offset could break it.
const AugmentDraw* draw_rows(const char* op, const Tensor& draws) {
  const void* p = draws.raw();
  LS_CHECK(reinterpret_cast<uintptr_t>(p) % alignof(AugmentDraw) == 0, op, ": draws are not aligned for AugmentDraw");
  return static_cast<const AugmentDraw*>(p);
}

DType check_args(const char* op, Context& ctx, const Tensor& images, const Tensor& draws, int64_t crop_padding,
                 const Tensor& mean, const Tensor& stddev, const Tensor& out) {
  LS_CHECK(images.defined() && images.dtype() == DType::u8, op, ": images are ",
           images.defined() ? dtype_name(images.dtype()) : "not allocated", ", expected u8");
  LS_CHECK(images.shape().rank() == 4 && images.format() == MemoryFormat::nchw, op, ": images ",
           images.shape().str(), " are not an nchw [N, C, H, W] batch");
  check_device(op, ctx, {&images});
  const Shape& shape = images.shape();
  LS_CHECK(draws.defined() && draws.dtype() == DType::u8, op, ": draws are not a u8 tensor (ops::augment_draws)");
  check_shape_and_device(op, ctx, "draws", draws, Shape{shape[0], kDrawBytes});
  for (const Tensor* t : {&mean, &stddev}) {
    const char* what = t == &mean ? "mean" : "std";
    check_tensor(op, ctx, what, *t);
    check_shape(op, what, *t, Shape{shape[1]});
  }
  LS_CHECK(crop_padding >= 0, op, ": negative crop padding ", crop_padding);
  check_shape_and_device(op, ctx, "out", out, shape);
  LS_CHECK(out.format() == MemoryFormat::nchw, op, ": out is ", memory_format_name(out.format()), ", expected nchw");
  return check_stored(op, ctx, {&out});
}

}  // namespace

Tensor augment_draws(const std::vector<AugmentDraw>& draws, Device device) {
  std::vector<uint8_t> bytes(draws.size() * sizeof(AugmentDraw));
  if (!draws.empty()) std::memcpy(bytes.data(), draws.data(), bytes.size());
  return Tensor::from_bytes(Shape{static_cast<int64_t>(draws.size()), kDrawBytes}, bytes, device);
}

void augment_images(Context& ctx, const Tensor& images, const Tensor& draws, int64_t crop_padding, const Tensor& mean,
                    const Tensor& stddev, Tensor& out, bool trivial) {
  const char* op = "augment";
  [[maybe_unused]] const DType dtype = check_args(op, ctx, images, draws, crop_padding, mean, stddev, out);
  const Shape& s = images.shape();
  LS_CHECK(!trivial || s[1] == 1 || s[1] == 3, op, ": TrivialAugment takes images of 1 or 3 channels, not ",
           s.str());
  const AugmentDraw* rows = draw_rows(op, draws);
  dispatch(op, ctx,
           [&] {
             cpu::augment_batch(images.u8_data(), out.data(), s[0], s[1], s[2], s[3], crop_padding, rows, mean.data(),
                                stddev.data());
           },
           LS_CUDA_TWIN(gpu, {
             with_stored_type(dtype, [&](auto tag) {
               using T = decltype(tag);
               if (trivial)
                 cuda::trivial_augment_batch(gpu.compute_stream, images.u8_data(), elems<T>(out), s[0], s[1], s[2],
                                             s[3], crop_padding, rows, mean.data(), stddev.data());
               else
                 cuda::augment_batch(gpu.compute_stream, images.u8_data(), elems<T>(out), s[0], s[1], s[2], s[3],
                                     crop_padding, rows, mean.data(), stddev.data());
             });
           }));
}

}  // namespace lockstep::ops
