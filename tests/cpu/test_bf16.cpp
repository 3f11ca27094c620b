// bf16 numerics (kernels/bf16_math.h), bf16 tensors (runtime/tensor.h) and
// the fused SGD that also writes the bf16 copy of the weights
// (kernels/cpu/sgd_cpu.h), each against an independent scalar reference.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/bf16_math.h"
#include "kernels/cpu/sgd_cpu.h"
#include "runtime/tensor.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;

namespace {

// x rounded to bf16 by arithmetic rather than bit manipulation: 8
// significant bits (7 stored), to nearest with ties to even
// (std::nearbyint in the default rounding mode), subnormals in steps of
// 2^-133, overflow to infinity. Finite x only.
float reference_bf16(float x) {
  const double d = x;
  if (d == 0.0) return x;
  int e = 0;
  std::frexp(d, &e);  // |d| = m * 2^e, m in [0.5, 1)
  const int quantum = std::max(e - 8, -133);
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(d, -quantum)), quantum));
}

}  // namespace

TEST_CASE("float to bf16 rounds to nearest even, as an arithmetic reference does", "[bf16][precision]") {
  REQUIRE(std::fegetround() == FE_TONEAREST);
  // Every 65,537th float (all exponents, every position of the dropped bits),
  // and the exact ties below and above an odd and an even last bit.
  std::vector<uint32_t> patterns;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 65537) patterns.push_back(static_cast<uint32_t>(u));
  for (uint32_t base : {0x3f800000u, 0x3f810000u, 0x00010000u, 0x7f7f0000u, 0xbf810000u})
    for (uint32_t low : {0x7fffu, 0x8000u, 0x8001u}) patterns.push_back(base | low);
  int64_t checked = 0;
  for (uint32_t u : patterns) {
    const float x = bits_float(u);
    if (std::isnan(x)) {
      REQUIRE(std::isnan(bf16_to_float(float_to_bf16(x))));
      continue;
    }
    const float want = reference_bf16(x);
    INFO("x = " << x << " (bits " << std::hex << u << ")");
    REQUIRE(float_bits(bf16_to_float(float_to_bf16(x))) == float_bits(want));
    REQUIRE(float_bits(round_to_bf16(x)) == float_bits(want));
    ++checked;
  }
  REQUIRE(checked > 60000);
  // The ties by hand: 1 + 2^-8 lies between 1 and 1 + 2^-7 and goes to the even 1.
  REQUIRE(round_to_bf16(1.0f + 0x1p-8f) == 1.0f);
  REQUIRE(round_to_bf16(1.0f + 0x1p-7f + 0x1p-8f) == 1.0f + 0x1p-6f);
  REQUIRE(float_to_bf16(1.0f) == 0x3f80);
  REQUIRE(float_to_bf16(-2.0f) == 0xc000);
  // NaN stays NaN, even with a payload only in the dropped bits; infinities
  // stay; the largest floats round to infinity.
  const float inf = std::numeric_limits<float>::infinity();
  REQUIRE(std::isnan(bf16_to_float(float_to_bf16(bits_float(0x7f800001u)))));
  REQUIRE(std::isnan(bf16_to_float(float_to_bf16(bits_float(0xff800100u)))));
  REQUIRE(bf16_to_float(float_to_bf16(inf)) == inf);
  REQUIRE(bf16_to_float(float_to_bf16(-inf)) == -inf);
  REQUIRE(bf16_to_float(float_to_bf16(std::numeric_limits<float>::max())) == inf);
  // Widening is exact: every bf16 comes back as itself.
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float x = bf16_to_float(static_cast<bf16_bits>(b));
    if (!std::isnan(x)) REQUIRE(float_to_bf16(x) == b);
  }
}

TEST_CASE("bf16 tensors take two bytes an element, view, copy and widen", "[bf16][tensor]") {
  std::vector<float> values = {1.0f, 1.0f + 0x1p-8f, -3.0f, 0.1f, 65504.0f, 1e-3f, 7.0f};
  Tensor t = Tensor::from_vector_bf16(Shape{7}, values);
  REQUIRE(t.dtype() == DType::bf16);
  REQUIRE(t.bytes() == 14);
  REQUIRE(dtype_size(DType::bf16) == 2);
  REQUIRE(std::string(dtype_name(DType::bf16)) == "bf16");
  std::vector<float> back = t.to_vector();
  for (size_t i = 0; i < values.size(); ++i) REQUIRE(back[i] == round_to_bf16(values[i]));
  Tensor v = t.view(3, Shape{2, 2});
  REQUIRE(v.bf16_data() == t.bf16_data() + 3);
  REQUIRE(v.to_vector() == std::vector<float>(back.begin() + 3, back.end()));
  Tensor copy = Tensor::empty(Shape{2, 2}, Device::cpu(), DType::bf16);
  copy.copy_from(v);
  REQUIRE(copy.to_vector() == v.to_vector());
  REQUIRE_THROWS_WITH(t.data(), Catch::Contains("bf16 read as f32"));
  REQUIRE_THROWS_WITH(copy.copy_from(Tensor::zeros(Shape{4})), Catch::Contains("f32 into [2, 2] bf16"));
  REQUIRE_THROWS(t.view(5, Shape{3}));
}

TEST_CASE("sgd with a bf16 copy updates as the scalar formula and writes the rounded weights", "[bf16][sgd]") {
  // Two decayed segments and one not, with padding between (left alone).
  const std::vector<ArenaSegment> segments = {{0, 37, true}, {48, 5, false}, {64, 300, true}};
  const int64_t total = 364;
  std::vector<float> w = random_values(total, 1), g = random_values(total, 2), v = random_values(total, 3);
  for (const SgdHyper& hyper : {SgdHyper{0.05f, 0.9f, 5e-4f, false}, SgdHyper{0.1f, 0.8f, 0.01f, true}}) {
    std::vector<float> ew = w, eg = g, ev = v;
    std::vector<uint16_t> wb(total, 0xdead), ewb(total, 0xdead);
    // The scalar formula, PyTorch's SGD (dampening 0), and the bf16 copy by arithmetic.
    for (const ArenaSegment& s : segments)
      for (int64_t i = s.offset; i < s.offset + s.count; ++i) {
        const float decay = s.decay ? hyper.weight_decay : 0.0f;
        const float grad = eg[i] + decay * ew[i];
        ev[i] = hyper.momentum * ev[i] + grad;
        ew[i] = ew[i] - hyper.lr * (hyper.nesterov ? grad + hyper.momentum * ev[i] : ev[i]);
        eg[i] = 0.0f;
        ewb[i] = static_cast<uint16_t>(float_bits(reference_bf16(ew[i])) >> 16);
      }
    std::vector<float> tw = w, tg = g, tv = v;
    cpu::sgd_momentum(tw.data(), tg.data(), tv.data(), segments.data(), 3, hyper, wb.data());
    INFO("nesterov " << hyper.nesterov);
    REQUIRE(std::memcmp(tw.data(), ew.data(), total * 4) == 0);
    REQUIRE(std::memcmp(tv.data(), ev.data(), total * 4) == 0);
    REQUIRE(std::memcmp(tg.data(), eg.data(), total * 4) == 0);
    REQUIRE(wb == ewb);  // padding untouched (0xdead), every weight rounded
    // Without the copy: the same fp32 update.
    std::vector<float> pw = w, pg = g, pv = v;
    cpu::sgd_momentum(pw.data(), pg.data(), pv.data(), segments.data(), 3, hyper);
    REQUIRE(pw == tw);
    REQUIRE(pv == tv);
  }
}
