#pragma once
// Channels-last (NHWC) tensors on the GPU, op by op: each
// op run with NHWC tensors on the emulated GPU equals the NCHW CPU reference
// within the layer tests' tolerance (1e-4 of each value plus 1e-4 of the
// tensor's RMS, layer_compare.h), the NHWC CPU path (NCHW copies,
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
#include <vector>

#include "gpu_compare.h"
#include "ops/memory_format.h"
#include "support/layer_harness.h"

namespace lockstep::testing::nhwc {

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

inline Results run(Device device, MemoryFormat format, const Body& body) {
  Run r(device, format);
  body(r);
  return r.out;
}

// The three comparisons of the file header; `gpu_bits` asks for the last.
inline void check_formats(const Body& body, bool gpu_bits) {
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
inline const Shape kImages[] = {Shape{3, 13, 5, 4}, Shape{1, 5, 3, 7}, Shape{4, 9, 1, 1}, Shape{2, 37, 9, 7},
                         Shape{4, 40, 16, 16}, Shape{2, 3, 50, 50}};

}  // namespace lockstep::testing::nhwc
