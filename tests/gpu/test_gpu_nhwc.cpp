// Channels-last (NHWC) tensors on the GPU, op by op: each
// op run with NHWC tensors on the emulated GPU equals the NCHW CPU reference
// within the layer tests' tolerance (1e-4 of each value plus 1e-4 of the
// tensor's RMS, test_gpu_layers.cpp), the NHWC CPU path (NCHW copies,
// ops/cpu_nchw.h) equals the NCHW CPU bit for bit, and for our own kernels
// (batch norm, synchronised too, channel sums) NHWC on the GPU equals NCHW on
// the GPU bit for bit. Their NHWC reductions add in another fixed order than
// NCHW's (kernels/cuda/channel_reduce.cuh), so their double sums may differ
// in the last bits; rounded to float they come out the same unless a sum lies
// within ~1e-16 relative of a float rounding boundary (odds ~2^-29 each). The
// order is a pure function of the shape, so a pass here passes under every
// schedule: for these shapes the bits are equal (a real GPU, whose compiler
// may fuse multiply-adds the emulator's does not, has the same odds). Shapes
// are odd on purpose: C a multiple of nothing, H != W, batch 1, 1x1 images, a
// matrix bigger than one transpose tile, tensors big enough for several runs.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>

#include "base/error.h"
#include "gpu_compare.h"
#include "ops/batchnorm.h"
#include "ops/batchnorm_sync.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/memory_format.h"
#include "ops/pool.h"
#include "ops/tensor_ops.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_tensor;
using lockstep::testing::require_close_scaled;

namespace {

constexpr double kRtol = 1e-4;
using Results = std::map<std::string, std::vector<float>>;

// Builds an op's tensors on one device in one format from fixed seeds, and
// reads results back as NCHW host vectors, so every run compares alike.
class Run {
public:
  // fp32: the GPU side is compared with the CPU reference (reference_options()).
  Run(Device device, MemoryFormat format) : ctx(device, lockstep::testing::reference_options()), format(format) {}

  // An image tensor [N, C, H, W] in the run's format (NCHW values from `seed`).
  Tensor image(const Shape& s, uint64_t seed, MemoryFormat f) {
    Tensor nchw = random_tensor(s, seed);
    return ops::to_format(host_, nchw, f).to(ctx.device());
  }
  Tensor image(const Shape& s, uint64_t seed) { return image(s, seed, format); }
  // Any other tensor (per-channel, bias): no format.
  Tensor plain(const Shape& s, uint64_t seed) { return random_tensor(s, seed).to(ctx.device()); }
  Tensor zeros(const Shape& s) { return Tensor::zeros(s, ctx.device()); }

  void keep(const std::string& name, const Tensor& t) {
    ctx.synchronize();
    Tensor host = t.to(Device::cpu());
    out[name] = host.shape().rank() == 4 ? ops::to_format(host_, host, MemoryFormat::nchw).to_vector()
                                         : host.to_vector();
  }

  Context ctx;
  MemoryFormat format;
  Results out;

private:
  Context host_{Device::cpu()};
};

using Body = std::function<void(Run&)>;

Results run(Device device, MemoryFormat format, const Body& body) {
  Run r(device, format);
  body(r);
  return r.out;
}

// The three comparisons of the file header; `gpu_bits` asks for the last.
void check_formats(const Body& body, bool gpu_bits) {
  const Results cpu_nchw = run(Device::cpu(), MemoryFormat::nchw, body);
  const Results cpu_nhwc = run(Device::cpu(), MemoryFormat::nhwc, body);
  const Results gpu_nhwc = run(Device::cuda(0), MemoryFormat::nhwc, body);
  REQUIRE(!cpu_nchw.empty());
  for (const auto& [name, want] : cpu_nchw) {
    INFO(name);
    REQUIRE(!want.empty());
    REQUIRE(cpu_nhwc.at(name) == want);
    require_close_scaled(gpu_nhwc.at(name), want, kRtol, name + " (gpu nhwc vs cpu nchw)");
  }
  if (gpu_bits) {
    const Results gpu_nchw = run(Device::cuda(0), MemoryFormat::nchw, body);
    for (const auto& [name, want] : gpu_nchw) {
      INFO(name << " (gpu nhwc vs gpu nchw, bit for bit)");
      REQUIRE(gpu_nhwc.at(name) == want);
    }
  }
}

// The last two are big enough for several runs per channel in the NHWC
// reductions (channel_reduce.cuh): 40 channels in two tiles of 32 (the second
// holding 8) over 8 runs of 128 pixels; 3 channels in one tile of 4 over 3
// runs of 1666 or 1667 pixels.
const Shape kImages[] = {Shape{3, 13, 5, 4}, Shape{1, 5, 3, 7}, Shape{4, 9, 1, 1}, Shape{2, 37, 9, 7},
                         Shape{4, 40, 16, 16}, Shape{2, 3, 50, 50}};

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

TEST_CASE("gpu convert_format equals the cpu's, both ways", "[gpu][memory-format]") {
  Context cpu(Device::cpu());
  Context gpu(Device::cuda(0), lockstep::testing::reference_options());
  // Odd extents, several 32 x 32 tiles, batch 1, one channel, one pixel.
  for (const Shape& s : {Shape{3, 37, 9, 7}, Shape{1, 5, 3, 11}, Shape{2, 1, 4, 4}, Shape{4, 70, 1, 1},
                         Shape{2, 33, 65, 1}}) {
    for (MemoryFormat from : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
      const MemoryFormat to = from == MemoryFormat::nchw ? MemoryFormat::nhwc : MemoryFormat::nchw;
      INFO("shape " << s.str() << " from " << memory_format_name(from));
      Tensor x = random_tensor(s, 3).with_format(from);
      Tensor want = ops::to_format(cpu, x, to);
      Tensor got = ops::to_format(gpu, x.to(Device::cuda(0)), to);
      gpu.synchronize();
      REQUIRE(got.format() == to);
      REQUIRE(got.to_vector() == want.to_vector());
    }
  }
}

TEST_CASE("gpu nhwc batch norm, plain and fused, equals nchw", "[gpu][memory-format][batchnorm]") {
  for (const Shape& s : kImages)
    for (Fused f : {Fused::none, Fused::relu, Fused::add_relu}) {
      INFO("shape " << s.str() << ", fused " << static_cast<int>(f));
      check_formats(batchnorm_body(s, f), true);
    }
}

TEST_CASE("gpu nhwc synchronised batch norm equals nchw", "[gpu][memory-format][batchnorm][sync-bn]") {
  for (const Shape& s : kImages) {
    INFO("shape " << s.str());
    check_formats(sync_batchnorm_body(s), true);
  }
}

TEST_CASE("gpu nhwc channel sums (the convolution's bias gradient) equal nchw", "[gpu][memory-format][conv]") {
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

TEST_CASE("gpu nhwc convolution equals nchw, with either filter format", "[gpu][memory-format][conv]") {
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

TEST_CASE("gpu nhwc pooling equals nchw", "[gpu][memory-format][pool]") {
  const std::pair<Shape, PoolWindow> cases[] = {{Shape{3, 13, 9, 6}, PoolWindow{3, 2, 1}},
                                                {Shape{1, 5, 4, 7}, PoolWindow{2, 2, 0}},
                                                {Shape{2, 37, 5, 5}, PoolWindow{3, 1, 1}}};
  for (const auto& [s, window] : cases) {
    INFO("shape " << s.str() << ", " << pool_window_text(window));
    check_formats(pool_body(s, window), false);
  }
}

TEST_CASE("gpu element-wise ops take nhwc tensors when every operand is nhwc", "[gpu][memory-format]") {
  check_formats(
      [](Run& r) {
        const Shape s{2, 7, 3, 5};
        Tensor a = r.image(s, 1), b = r.image(s, 2), sum = r.image(s, 3), y = r.image(s, 4), dx = r.image(s, 5);
        ops::add(r.ctx, a, b, sum);
        ops::relu_forward(r.ctx, a, y);
        ops::relu_backward(r.ctx, y, b, dx, true);
        r.keep("sum", sum);
        r.keep("relu", y);
        r.keep("relu dx", dx);
      },
      true);
}

TEST_CASE("gpu ops refuse images of mixed memory formats", "[gpu][memory-format]") {
  Run r(Device::cuda(0), MemoryFormat::nhwc);
  const Shape s{2, 3, 4, 5};
  Tensor x = r.image(s, 1), y_nchw = r.image(s, 2, MemoryFormat::nchw);
  Tensor c3 = r.zeros(Shape{3}), g = r.plain(Shape{3}, 3), b = r.plain(Shape{3}, 4);
  Tensor m = r.zeros(Shape{3}), v = r.zeros(Shape{3}), sm = r.zeros(Shape{3}), si = r.zeros(Shape{3});
  REQUIRE_THROWS_WITH(ops::batchnorm_forward_train(r.ctx, x, g, b, 1e-5f, y_nchw, m, v, sm, si),
                      Catch::Contains("memory formats nhwc and nchw mixed"));
  Tensor w = r.image(Shape{4, 3, 3, 3}, 5);
  Tensor conv_out = r.image(Shape{2, 4, 4, 5}, 6, MemoryFormat::nchw);
  REQUIRE_THROWS_WITH(ops::conv2d_forward(r.ctx, x, w, nullptr, conv_out, 1, 1),
                      Catch::Contains("conv2d forward: memory formats nhwc and nchw mixed"));
  Tensor pooled = r.image(Shape{2, 3, 2, 2}, 7, MemoryFormat::nchw);
  REQUIRE_THROWS_WITH(ops::max_pool2d_forward(r.ctx, x, pooled, PoolWindow{2, 2, 0}),
                      Catch::Contains("max_pool2d: memory formats nhwc and nchw mixed"));
}
