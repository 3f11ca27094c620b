// The memory-format tag of tensors (kernels/memory_format.h, runtime/tensor.h)
// and the conversion op (ops/memory_format.h) on the CPU.
#include <catch2/catch.hpp>

#include "ops/memory_format.h"
#include "ops/tensor_ops.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_tensor;

namespace {

// Element (n, c, h, w) of a packed [N, C, H, W] tensor stored as `format`.
int64_t offset_of(const Shape& s, MemoryFormat format, int64_t n, int64_t c, int64_t h, int64_t w) {
  if (format == MemoryFormat::nchw) return ((n * s[1] + c) * s[2] + h) * s[3] + w;
  return ((n * s[2] + h) * s[3] + w) * s[1] + c;
}

}  // namespace

TEST_CASE("tensors are nchw unless relabelled, and views keep the tag", "[memory-format]") {
  Tensor t = Tensor::zeros(Shape{3, 5, 2, 7});
  REQUIRE(t.format() == MemoryFormat::nchw);
  Tensor h = t.with_format(MemoryFormat::nhwc);
  REQUIRE(h.format() == MemoryFormat::nhwc);
  REQUIRE(h.raw() == t.raw());  // relabelling moves no data
  Tensor slice = h.batch_slice(1, 2);
  REQUIRE(slice.format() == MemoryFormat::nhwc);
  REQUIRE(slice.shape() == Shape{2, 5, 2, 7});
  REQUIRE(static_cast<char*>(slice.raw()) - static_cast<char*>(h.raw()) == 5 * 2 * 7 * 4);
  REQUIRE(h.reshape(h.shape()).format() == MemoryFormat::nhwc);
  REQUIRE(h.to(Device::cpu()).format() == MemoryFormat::nhwc);
  // Anything but whole samples would read an nhwc tensor in the wrong order.
  REQUIRE_THROWS_WITH(h.reshape(Shape{3, 70}), Catch::Contains("only whole samples of an nhwc tensor"));
  REQUIRE_THROWS_WITH(h.view(1, Shape{1, 5, 2, 7}), Catch::Contains("only whole samples of an nhwc tensor"));
  REQUIRE_THROWS_WITH(Tensor::zeros(Shape{4, 6}).with_format(MemoryFormat::nhwc),
                      Catch::Contains("a nhwc tensor must be [N, C, H, W], got [4, 6]"));
  REQUIRE(t.reshape(Shape{3, 70}).format() == MemoryFormat::nchw);
}

TEST_CASE("copy_from keeps the memory format and refuses to mix them", "[memory-format]") {
  Tensor a = random_tensor(Shape{2, 3, 4, 5}, 1);
  Tensor b = Tensor::zeros(a.shape()).with_format(MemoryFormat::nhwc);
  REQUIRE_THROWS_WITH(b.copy_from(a), Catch::Contains("copy of an nchw tensor [2, 3, 4, 5] into an nhwc one"));
  Tensor c = Tensor::zeros(a.shape()).with_format(MemoryFormat::nhwc);
  c.copy_from(a.with_format(MemoryFormat::nhwc));
  REQUIRE(c.to_vector() == a.to_vector());
}

TEST_CASE("convert_format moves each element to its place in the other format, and back", "[memory-format]") {
  Context ctx(Device::cpu());
  // Odd extents, a matrix bigger than one 32 x 32 block, batch 1, one channel, one pixel.
  for (const Shape& s : {Shape{3, 37, 9, 7}, Shape{1, 5, 3, 11}, Shape{2, 1, 4, 4}, Shape{4, 70, 1, 1}}) {
    Tensor x = random_tensor(s, 7);
    Tensor y = ops::to_format(ctx, x, MemoryFormat::nhwc);
    REQUIRE(y.format() == MemoryFormat::nhwc);
    REQUIRE(y.shape() == s);
    const std::vector<float> in = x.to_vector(), out = y.to_vector();
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t c = 0; c < s[1]; ++c)
        for (int64_t h = 0; h < s[2]; ++h)
          for (int64_t w = 0; w < s[3]; ++w)
            REQUIRE(out[offset_of(s, MemoryFormat::nhwc, n, c, h, w)] ==
                    in[offset_of(s, MemoryFormat::nchw, n, c, h, w)]);
    Tensor back = ops::to_format(ctx, y, MemoryFormat::nchw);
    REQUIRE(back.format() == MemoryFormat::nchw);
    REQUIRE(back.to_vector() == in);
    Tensor same = ops::to_format(ctx, y, MemoryFormat::nhwc);  // same format: a copy
    REQUIRE(same.to_vector() == out);
    REQUIRE(same.raw() != y.raw());
  }
}

TEST_CASE("convert_format and element-wise ops refuse what they cannot do", "[memory-format]") {
  Context ctx(Device::cpu());
  Tensor x = random_tensor(Shape{2, 3, 4, 5}, 1);
  Tensor wrong = Tensor::zeros(Shape{2, 3, 5, 4}).with_format(MemoryFormat::nhwc);
  REQUIRE_THROWS_WITH(ops::convert_format(ctx, x, wrong), Catch::Contains("destination is [2, 3, 5, 4]"));
  Tensor flat = random_tensor(Shape{2, 60}, 1);
  Tensor flat_out = Tensor::zeros(Shape{2, 60});
  REQUIRE_THROWS_WITH(ops::convert_format(ctx, flat, flat_out), Catch::Contains("must be [N, C, H, W]"));
  Tensor alias = x.with_format(MemoryFormat::nhwc);
  REQUIRE_THROWS_WITH(ops::convert_format(ctx, x, alias), Catch::Contains("separate buffers"));
  // Element-wise ops pair elements by position: mixed formats would pair the wrong ones.
  Tensor h = ops::to_format(ctx, x, MemoryFormat::nhwc);
  Tensor y = Tensor::zeros(x.shape());
  REQUIRE_THROWS_WITH(ops::add(ctx, x, h, y), Catch::Contains("add: memory formats nchw and nhwc differ"));
  Tensor yh = Tensor::zeros(x.shape()).with_format(MemoryFormat::nhwc);
  ops::add(ctx, h, h, yh);  // one format throughout: fine
  std::vector<float> hv = h.to_vector(), yv = yh.to_vector();
  for (size_t i = 0; i < hv.size(); ++i) REQUIRE(yv[i] == hv[i] + hv[i]);
}
