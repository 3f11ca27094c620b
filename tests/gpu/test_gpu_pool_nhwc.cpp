// Pooling on the GPU with channels-last (NHWC) images: the checks of nhwc_check.h.
#include <catch2/catch.hpp>

#include <string>

#include "nhwc_check.h"
#include "ops/pool.h"

using namespace lockstep;
using namespace lockstep::testing::nhwc;

namespace {

// Max and average pooling forward and backward (dx added onto), and global
// average pooling.
Body pool_body(const Shape& s, PoolWindow window) {
  return [s, window](Run& r) {
    const Shape ys = ops::pool_output_shape("test", s, window);
    Tensor x = r.image(s, 1), dy = r.image(ys, 2);
    for (bool max : {true, false}) {
      const std::string kind = max ? "max " : "avg ";
      Tensor y = r.image(ys, 3), dx = r.image(s, 4);
      if (max) {
        ops::max_pool2d_forward(r.ctx, x, y, window);
        ops::max_pool2d_backward(r.ctx, x, y, dy, dx, window, true);
      } else {
        ops::avg_pool2d_forward(r.ctx, x, y, window);
        ops::avg_pool2d_backward(r.ctx, x, y, dy, dx, window, true);
      }
      r.keep(kind + "y", y);
      r.keep(kind + "dx", dx);
    }
    const Shape gs{s[0], s[1], 1, 1};
    Tensor gy = r.image(gs, 5), gdy = r.image(gs, 6), gdx = r.image(s, 7), gdx_written = r.image(s, 8);
    ops::global_avg_pool_forward(r.ctx, x, gy);
    ops::global_avg_pool_backward(r.ctx, gdy, gdx, true);
    ops::global_avg_pool_backward(r.ctx, gdy, gdx_written, false);
    r.keep("global y", gy);
    r.keep("global dx", gdx);
    r.keep("global dx written", gdx_written);
  };
}

}  // namespace

TEST_CASE("gpu nhwc pooling equals nchw", "[gpu][memory-format][pool]") {
  const std::pair<Shape, PoolWindow> cases[] = {{Shape{3, 13, 9, 6}, PoolWindow{3, 2, 1}},
                                                {Shape{1, 5, 4, 7}, PoolWindow{2, 2, 0}},
                                                {Shape{2, 37, 5, 5}, PoolWindow{3, 1, 1}}};
  for (const auto& [s, window] : cases) {
    INFO("shape " << s.str() << ", " << pool_window_text(window));
    check_formats(pool_body(s, window), false);
  }
}
