// Batch norm on the GPU with channels-last (NHWC) images, plain, fused and
// synchronised: the checks of nhwc_check.h.
#include <catch2/catch.hpp>

#include <string>

#include "nhwc_check.h"
#include "ops/batchnorm.h"
#include "ops/batchnorm_sync.h"

using namespace lockstep;
using namespace lockstep::testing::nhwc;

namespace {

enum class Fused { none, relu, add_relu };

// A batch-norm layer's per-channel tensors: parameters from fixed seeds, the
// statistics and gradients zero.
struct BnTensors {
  Tensor gamma, beta, mean, var, saved_mean, saved_inv, dgamma, dbeta;
};
BnTensors bn_tensors(Run& r, int64_t c) {
  return {r.plain(Shape{c}, 7), r.plain(Shape{c}, 8), r.zeros(Shape{c}), r.zeros(Shape{c}),
          r.zeros(Shape{c}),    r.zeros(Shape{c}),    r.zeros(Shape{c}), r.zeros(Shape{c})};
}
// Keeps what a training forward and backward wrote besides the images.
void keep_bn(Run& r, const BnTensors& t) {
  r.keep("mean", t.mean);
  r.keep("var", t.var);
  r.keep("saved mean", t.saved_mean);
  r.keep("saved inv std", t.saved_inv);
  r.keep("dgamma", t.dgamma);
  r.keep("dbeta", t.dbeta);
}

// Training forward and backward of batch norm, plain or fused, with dx and
// the shortcut gradient added onto what they hold (the accumulate paths).
Body batchnorm_body(const Shape& s, Fused fused) {
  return [s, fused](Run& r) {
    const int64_t c = s[1];
    Tensor x = r.image(s, 1), shortcut = r.image(s, 2), dy = r.image(s, 3), dx = r.image(s, 4),
           ds = r.image(s, 5), y = r.image(s, 6);
    BnTensors t = bn_tensors(r, c);
    auto &gamma = t.gamma, &beta = t.beta, &mean = t.mean, &var = t.var, &saved_mean = t.saved_mean,
         &saved_inv = t.saved_inv, &dgamma = t.dgamma, &dbeta = t.dbeta;
    const float eps = 1e-5f;
    switch (fused) {
      case Fused::none:
        ops::batchnorm_forward_train(r.ctx, x, gamma, beta, eps, y, mean, var, saved_mean, saved_inv);
        ops::batchnorm_backward(r.ctx, x, dy, gamma, saved_mean, saved_inv, dgamma, dbeta, &dx, true);
        break;
      case Fused::relu:
        ops::batchnorm_relu_forward_train(r.ctx, x, gamma, beta, eps, y, mean, var, saved_mean, saved_inv);
        ops::batchnorm_relu_backward(r.ctx, x, y, dy, gamma, saved_mean, saved_inv, dgamma, dbeta, &dx, true);
        break;
      case Fused::add_relu:
        ops::batchnorm_add_relu_forward_train(r.ctx, x, shortcut, gamma, beta, eps, y, mean, var, saved_mean,
                                              saved_inv);
        ops::batchnorm_add_relu_backward(r.ctx, x, y, dy, gamma, saved_mean, saved_inv, dgamma, dbeta, &dx, true,
                                         &ds, true);
        r.keep("dshortcut", ds);
        break;
    }
    r.keep("y", y);
    r.keep("dx", dx);
    keep_bn(r, t);
    Tensor y_eval = r.image(s, 9);
    ops::batchnorm_forward_eval(r.ctx, x, gamma, beta, saved_mean, var, eps, y_eval);
    r.keep("y eval", y_eval);
  };
}

// One replica: the op's sums are already the group's, so nothing to add; its
// every pass over the images (statistics, normalising, gradient sums, input
// gradient) still runs, in the run's format.
class OneReplica final : public ReplicaGroup {
public:
  int size() const override { return 1; }
  void all_reduce_sum(Context&, double*, int64_t) override {}
};

// Synchronised batch norm's training forward and backward (--sync-bn), dx
// added onto what it holds.
Body sync_batchnorm_body(const Shape& s) {
  return [s](Run& r) {
    const int64_t c = s[1];
    OneReplica group;
    Tensor x = r.image(s, 1), dy = r.image(s, 3), dx = r.image(s, 4), y = r.image(s, 6);
    BnTensors t = bn_tensors(r, c);
    Tensor buffer = r.zeros(Shape{ops::batchnorm_sync_buffer_floats(c)});
    ops::batchnorm_forward_train_synced(r.ctx, group, x, t.gamma, t.beta, 1e-5f, y, t.mean, t.var, t.saved_mean,
                                        t.saved_inv, buffer);
    ops::batchnorm_backward_synced(r.ctx, group, x, dy, t.gamma, t.saved_mean, t.saved_inv, t.dgamma, t.dbeta, &dx,
                                   true, buffer);
    r.keep("y", y);
    r.keep("dx", dx);
    keep_bn(r, t);
  };
}

}  // namespace

TEST_CASE("gpu nhwc batch norm, plain and fused, equals nchw", "[gpu][memory-format][batchnorm2d]") {
  for (const Shape& s : kImages)
    for (Fused f : {Fused::none, Fused::relu, Fused::add_relu}) {
      INFO("shape " << s.str() << ", fused " << static_cast<int>(f));
      check_formats(batchnorm_body(s, f), true);
    }
}

TEST_CASE("gpu nhwc synchronised batch norm equals nchw", "[gpu][memory-format][batchnorm2d][sync-bn]") {
  for (const Shape& s : kImages) {
    INFO("shape " << s.str());
    check_formats(sync_batchnorm_body(s), true);
  }
}
