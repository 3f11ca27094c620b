// conv2d on the GPU with channels-last (NHWC) images: the checks of
// nhwc_check.h.
#include <catch2/catch.hpp>

#include <string>

#include "base/error.h"
#include "nhwc_check.h"
#include "ops/conv.h"

using namespace lockstep;
using namespace lockstep::testing::nhwc;

namespace {

struct ConvCase {
  Shape x, w;
  int stride, padding;
};

// Forward with bias (the NHWC bias add), backward data added onto dx,
// backward filter, backward bias (channel sums), the filter in `filter`.
Body conv_body(const ConvCase& k, MemoryFormat filter) {
  return [k, filter](Run& r) {
    ConvGeometry g = ops::conv2d_geometry("test", k.x, k.w, k.stride, k.padding);
    const Shape ys{g.batch, g.out_channels, g.out_h, g.out_w};
    Tensor x = r.image(k.x, 1), w = r.image(k.w, 2, filter), bias = r.plain(Shape{k.w[0]}, 3);
    Tensor y = r.image(ys, 4), dy = r.image(ys, 5), dx = r.image(k.x, 6), dw = r.image(k.w, 7, filter);
    Tensor db = r.zeros(Shape{k.w[0]});
    ops::conv2d_forward(r.ctx, x, w, &bias, y, k.stride, k.padding);
    ops::conv2d_backward_data(r.ctx, dy, w, dx, k.stride, k.padding, true);
    ops::conv2d_backward_filter(r.ctx, x, dy, dw, k.stride, k.padding);
    ops::conv2d_backward_bias(r.ctx, dy, db);
    r.keep("y", y);
    r.keep("dx", dx);
    r.keep("dw", dw);
    r.keep("db", db);
  };
}

}  // namespace

TEST_CASE("gpu nhwc channel sums (the convolution's bias gradient) equal nchw", "[gpu][memory-format][conv2d]") {
  for (const Shape& s : kImages) {
    INFO("shape " << s.str());
    check_formats(
        [s](Run& r) {
          Tensor dy = r.image(s, 1), db = r.zeros(Shape{s[1]});
          ops::conv2d_backward_bias(r.ctx, dy, db);
          r.keep("db", db);
        },
        true);
  }
}

TEST_CASE("gpu nhwc convolution equals nchw, with either filter format", "[gpu][memory-format][conv2d]") {
  const ConvCase cases[] = {{Shape{3, 6, 9, 6}, Shape{7, 6, 3, 3}, 2, 1},
                            {Shape{1, 3, 7, 5}, Shape{5, 3, 3, 3}, 1, 1},
                            {Shape{2, 5, 4, 4}, Shape{11, 5, 1, 1}, 1, 0}};
  for (const ConvCase& k : cases)
    for (MemoryFormat filter : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
      INFO("x " << k.x.str() << ", w " << k.w.str() << " as " << memory_format_name(filter));
#if !LOCKSTEP_GPU_EMULATED
      // NHWC images with a KCRS filter: an H200's cuDNN 9.19 supports no FP32
      // backward-data algorithm for the first case (every one NOT_SUPPORTED,
      // by the heuristics and by a search alike). The layers never ask it:
      // NHWC images always get a KRSC filter copy (layers/conv2d.cpp). Through
      // the ops API the refusal must name the convolution; where cuDNN
      // supports it, the results must agree.
      if (filter == MemoryFormat::nchw) {
        try {
          check_formats(conv_body(k, filter), false);
        } catch (const Error& e) {
          const std::string message = e.what();
          INFO(message);
          REQUIRE(message.find("no cuDNN algorithm for input [" + std::to_string(k.x[0])) != std::string::npos);
          WARN("a real cuDNN refuses NHWC images with a KCRS filter here: " << message);
        }
        continue;
      }
#endif
      check_formats(conv_body(k, filter), false);
    }
}
