#include <catch2/catch.hpp>

#include "runtime/cuda/cuda_context.h"
#include "ops/sgd.h"
#include "gpu_compare.h"
#include "kernels/bf16_math.h"
#include "kernels/cpu/sgd_cpu.h"
#include "kernels/cuda/sgd_cuda.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;
using lockstep::testing::require_close;

namespace {
// Fills w, g, v of the parameters with random values (padding stays zero),
// the same on both arenas.
void fill_same(ParameterArenas& a, ParameterArenas& b, uint64_t seed) {
  std::vector<float> w(a.total(), 0.0f), g(a.total(), 0.0f), v(a.total(), 0.0f);
  for (const ArenaSegment& s : a.segments()) {
    auto rw = random_values(s.count, seed + 3 * s.offset), rg = random_values(s.count, seed + 3 * s.offset + 1),
         rv = random_values(s.count, seed + 3 * s.offset + 2);
    std::copy(rw.begin(), rw.end(), w.begin() + s.offset);
    std::copy(rg.begin(), rg.end(), g.begin() + s.offset);
    std::copy(rv.begin(), rv.end(), v.begin() + s.offset);
  }
  for (ParameterArenas* arenas : {&a, &b}) {
    Shape flat{a.total()};
    arenas->params.view(0, flat).copy_from(Tensor::from_vector(flat, w));
    arenas->grads.view(0, flat).copy_from(Tensor::from_vector(flat, g));
    arenas->momentum.view(0, flat).copy_from(Tensor::from_vector(flat, v));
  }
}

void require_same_arenas(ParameterArenas& gpu, ParameterArenas& cpu) {
  require_close(gpu.params.to_vector(), cpu.params.to_vector(), 1e-5, 1e-7);
  require_close(gpu.momentum.to_vector(), cpu.momentum.to_vector(), 1e-5, 1e-7);
  for (float g : gpu.grads.to_vector()) REQUIRE(g == 0.0f);
}

// One step at lr 0.05 on both arenas from the same random w, g and v (`seed`): they must agree.
void step_both(Context& gpu_ctx, Context& cpu_ctx, ParameterArenas& gpu, ParameterArenas& cpu, const SgdConfig& config,
               uint64_t seed) {
  fill_same(gpu, cpu, seed);
  ops::sgd_step(gpu_ctx, gpu, config, 0.05f);
  ops::sgd_step(cpu_ctx, cpu, config, 0.05f);
  gpu_ctx.synchronize();
  require_same_arenas(gpu, cpu);
}
}  // namespace

TEST_CASE("gpu sgd step equals the cpu reference over odd-shaped segments", "[gpu][sgd]") {
  std::vector<ParamSpec> specs = {{"conv.w", Shape{5, 3, 3, 3}, Init::zeros, true},
                                  {"conv.b", Shape{5}, Init::zeros, false},
                                  {"bn.gamma", Shape{7}, Init::zeros, false},
                                  {"fc.w", Shape{3, 37}, Init::zeros, true},
                                  {"fc.b", Shape{1}, Init::zeros, false},
                                  {"big.w", Shape{1001, 33}, Init::zeros, true}};
  for (bool nesterov : {false, true}) {
    INFO("nesterov " << nesterov);
    Context gpu_ctx(Device::cuda(0)), cpu_ctx(Device::cpu());
    ParameterArenas gpu(specs, Device::cuda(0), true), cpu(specs, Device::cpu(), true);
    SgdConfig config{0.9f, 5e-4f, nesterov};
    for (int step = 0; step < 3; ++step) step_both(gpu_ctx, cpu_ctx, gpu, cpu, config, 100 + step);
  }
}

TEST_CASE("gpu sgd with a scaled or frozen backbone equals the cpu reference", "[gpu][sgd]") {
  std::vector<ParamSpec> specs = {{"conv.w", Shape{5, 3, 3, 3}, Init::zeros, true},
                                  {"bn.gamma", Shape{7}, Init::zeros, false},
                                  {"fc.w", Shape{3, 37}, Init::zeros, true},
                                  {"fc.b", Shape{3}, Init::zeros, false}};
  for (float scale : {0.1f, 0.0f}) {
    INFO("scale " << scale);
    Context gpu_ctx(Device::cuda(0)), cpu_ctx(Device::cpu());
    ParameterArenas gpu(specs, Device::cuda(0), true), cpu(specs, Device::cpu(), true);
    SgdConfig config{0.9f, 5e-4f, false};
    config.backbone_elements = cpu.entries()[2].offset;  // the classifier's start
    config.backbone_lr_scale = scale;
    for (int step = 0; step < 2; ++step) step_both(gpu_ctx, cpu_ctx, gpu, cpu, config, 300 + step);
    // And the scale reaches the weights: a frozen backbone keeps the values it was given.
    fill_same(gpu, cpu, 400);
    const std::vector<float> before = gpu.params.to_vector();
    ops::sgd_step(gpu_ctx, gpu, config, 0.05f);
    gpu_ctx.synchronize();
    const std::vector<float> after = gpu.params.to_vector();
    if (scale == 0.0f)
      for (int64_t i = 0; i < config.backbone_elements; ++i) REQUIRE(after[i] == before[i]);
    REQUIRE(after[config.backbone_elements] != before[config.backbone_elements]);
  }
}

TEST_CASE("gpu sgd with gradient clipping equals the cpu reference, clipped or not", "[gpu][sgd]") {
  std::vector<ParamSpec> specs = {{"conv.w", Shape{5, 3, 3, 3}, Init::zeros, true},
                                  {"conv.b", Shape{5}, Init::zeros, false},
                                  {"big.w", Shape{1001, 133}, Init::zeros, true},
                                  {"fc.b", Shape{3}, Init::zeros, false}};
  // The random gradients' norm is about 211 (133,276 values of U(-1, 1)): 10 clips them, 1000 does not.
  for (float clip : {10.0f, 1000.0f}) {
    INFO("clip " << clip);
    Context gpu_ctx(Device::cuda(0)), cpu_ctx(Device::cpu());
    ParameterArenas gpu(specs, Device::cuda(0), true), cpu(specs, Device::cpu(), true), plain(specs, Device::cpu(), true);
    SgdConfig config{0.9f, 5e-4f, false, clip};
    for (int step = 0; step < 3; ++step) {
      fill_same(gpu, cpu, 300 + step);
      fill_same(plain, plain, 300 + step);
      ops::sgd_step(gpu_ctx, gpu, config, 0.05f);
      ops::sgd_step(cpu_ctx, cpu, config, 0.05f);
      ops::sgd_step(cpu_ctx, plain, SgdConfig{0.9f, 5e-4f, false, 0.0f}, 0.05f);
      gpu_ctx.synchronize();
      require_same_arenas(gpu, cpu);
      // Clipping changed the step exactly when the norm was above the limit.
      const bool same_as_unclipped = cpu.params.to_vector() == plain.params.to_vector();
      REQUIRE(same_as_unclipped == (clip == 1000.0f));
    }
  }
}

TEST_CASE("gpu sgd handles more decay switches than one launch holds", "[gpu][sgd]") {
  // 9001 alternating tensors: 9000 decay switches, two launches of the kernel.
  std::vector<ParamSpec> specs;
  for (int i = 0; i < 9001; ++i) specs.push_back({"p" + std::to_string(i), Shape{1 + i % 5}, Init::zeros, i % 2 == 0});
  Context gpu_ctx(Device::cuda(0)), cpu_ctx(Device::cpu());
  ParameterArenas gpu(specs, Device::cuda(0), true), cpu(specs, Device::cpu(), true);
  fill_same(gpu, cpu, 7);
  SgdConfig config{0.8f, 0.1f, false};
  ops::sgd_step(gpu_ctx, gpu, config, 0.1f);
  ops::sgd_step(cpu_ctx, cpu, config, 0.1f);
  gpu_ctx.synchronize();
  require_same_arenas(gpu, cpu);
}

TEST_CASE("gpu sgd launcher updates a total that is not a multiple of four", "[gpu][sgd]") {
  // Segments at 0 (12 elements, decay) and 16 (3 elements, no decay), total 19:
  // the last three elements are the kernel's scalar tail.
  for (int64_t total : {19, 3}) {
    std::vector<ArenaSegment> segments =
        total == 19 ? std::vector<ArenaSegment>{{0, 12, true}, {16, 3, false}} : std::vector<ArenaSegment>{{0, 3, true}};
    std::vector<float> w = random_values(total, 1), g = random_values(total, 2), v = random_values(total, 3);
    for (int64_t i = 12; i < 16 && total == 19; ++i) w[i] = g[i] = v[i] = 0.0f;  // padding
    std::vector<float> ew = w, eg = g, ev = v;
    SgdHyper hyper{0.1f, 0.9f, 0.25f, true};
    cpu::sgd_momentum(ew.data(), eg.data(), ev.data(), segments.data(), static_cast<int>(segments.size()), hyper);

    Context ctx(Device::cuda(0));
    Tensor tw = Tensor::from_vector(Shape{total}, w, Device::cuda(0));
    Tensor tg = Tensor::from_vector(Shape{total}, g, Device::cuda(0));
    Tensor tv = Tensor::from_vector(Shape{total}, v, Device::cuda(0));
    cuda::sgd_momentum(ctx.cuda()->compute_stream, tw.data(), tg.data(), tv.data(), total, segments, hyper);
    ctx.synchronize();
    require_close(tw.to_vector(), ew);
    require_close(tv.to_vector(), ev);
    require_close(tg.to_vector(), eg);
  }
}

TEST_CASE("gpu sgd refuses a misplaced segment", "[gpu][sgd]") {
  Context ctx(Device::cuda(0));
  Tensor t = Tensor::zeros(Shape{32}, Device::cuda(0));
  std::vector<ArenaSegment> segments = {{0, 8, true}, {10, 4, false}};
  REQUIRE_THROWS_WITH(cuda::sgd_momentum(ctx.cuda()->compute_stream, t.data(), t.data(), t.data(), 32, segments,
                                         SgdHyper{}),
                      Catch::Contains("segment at 10"));
}

TEST_CASE("gpu sgd writing the bf16 copy equals the cpu, padding and tail included", "[gpu][sgd][bf16]") {
  // Through sgd_step on arenas with a bf16 copy (one launch, the float4 body),
  // and through the launcher on a total whose last elements are the scalar tail.
  std::vector<ParamSpec> specs = {{"conv.w", Shape{5, 3, 3, 3}, Init::zeros, true},
                                  {"conv.b", Shape{5}, Init::zeros, false},
                                  {"big.w", Shape{1001, 33}, Init::zeros, true}};
  Context gpu_ctx(Device::cuda(0)), cpu_ctx(Device::cpu());
  ParameterArenas gpu(specs, Device::cuda(0), true), cpu(specs, Device::cpu(), true);
  gpu.params_bf16 = Tensor::zeros(Shape{gpu.total()}, Device::cuda(0), DType::bf16);
  cpu.params_bf16 = Tensor::zeros(Shape{cpu.total()}, Device::cpu(), DType::bf16);
  SgdConfig config{0.9f, 5e-4f, true};
  for (int step = 0; step < 3; ++step) {
    step_both(gpu_ctx, cpu_ctx, gpu, cpu, config, 500 + step);
    const std::vector<float> gw = gpu.params.to_vector(), gb = gpu.params_bf16.to_vector(), cb = cpu.params_bf16.to_vector();
    for (size_t i = 0; i < gw.size(); ++i) {
      INFO("element " << i);
      REQUIRE(gb[i] == round_to_bf16(gw[i]));  // the copy is the device's own update, rounded
    }
#if LOCKSTEP_GPU_EMULATED
    REQUIRE(gb == cb);  // the same arithmetic on the emulated GPU: the same bits
#else
    require_close(gb, cb, 1.0 / 128, 0.0);  // an FMA may move a weight across a bf16 rounding boundary
#endif
  }

  const int64_t total = 19;
  const std::vector<ArenaSegment> segments = {{0, 12, true}, {16, 3, false}};
  std::vector<float> w = random_values(total, 1), g = random_values(total, 2), v = random_values(total, 3);
  for (int64_t i = 12; i < 16; ++i) w[i] = g[i] = v[i] = 0.0f;  // padding
  std::vector<float> ew = w, eg = g, ev = v;
  std::vector<uint16_t> ewb(total, 0);
  SgdHyper hyper{0.1f, 0.9f, 0.25f, false};
  cpu::sgd_momentum(ew.data(), eg.data(), ev.data(), segments.data(), 2, hyper, ewb.data());
  Context ctx(Device::cuda(0));
  Tensor tw = Tensor::from_vector(Shape{total}, w, Device::cuda(0));
  Tensor tg = Tensor::from_vector(Shape{total}, g, Device::cuda(0));
  Tensor tv = Tensor::from_vector(Shape{total}, v, Device::cuda(0));
  Tensor tb = Tensor::zeros(Shape{total}, Device::cuda(0), DType::bf16);
  cuda::sgd_momentum(ctx.cuda()->compute_stream, tw.data(), tg.data(), tv.data(), total, segments, hyper,
                     tb.bf16_data());
  ctx.synchronize();
  require_close(tw.to_vector(), ew);
  std::vector<float> expected_bf16(total);
  for (int64_t i = 0; i < total; ++i) expected_bf16[i] = bf16_to_float(ewb[i]);
  REQUIRE(tb.to_vector() == expected_bf16);  // the padding's zero weights give zero bf16
}
