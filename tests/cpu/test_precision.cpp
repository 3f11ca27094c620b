// Precision modes (runtime/precision.h) and the TF32 rounding the emulated
// cuDNN and cuBLAS apply to their operands (kernels/tf32_math.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/tf32_math.h"
#include "runtime/context.h"
#include "runtime/precision.h"

using namespace lockstep;


TEST_CASE("precision names parse back, and a bad one is refused naming the option", "[precision]") {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16})
    REQUIRE(parse_precision(precision_name(p)) == p);
  REQUIRE(std::string(precision_name(Precision::tf32)) == "tf32");
  REQUIRE_THROWS_WITH(parse_precision("fp16", "--precision"),
                      Catch::Contains("--precision 'fp16'") && Catch::Contains("fp32, tf32 or bf16"));
  REQUIRE_THROWS_WITH(parse_precision("TF32"), Catch::Contains("'TF32'"));
  REQUIRE(ContextOptions{}.precision == Precision::tf32);  // PyTorch's default for convolutions
}

TEST_CASE("tf32 rounding keeps 10 mantissa bits, to nearest with ties to even", "[precision][tf32]") {
  // 1 + 2^-10 is a TF32 value; 1 + 2^-11 is the tie between 1 and it, which goes to the even 1.
  REQUIRE(round_to_tf32(1.0f + 0x1p-10f) == 1.0f + 0x1p-10f);
  REQUIRE(round_to_tf32(1.0f + 0x1p-11f) == 1.0f);
  // The tie above an odd last bit goes up to the even one.
  REQUIRE(round_to_tf32(1.0f + 0x1p-10f + 0x1p-11f) == 1.0f + 0x1p-9f);
  // Past the tie rounds up, below it down; the sign does not matter.
  REQUIRE(round_to_tf32(1.0f + 0x1p-11f + 0x1p-23f) == 1.0f + 0x1p-10f);
  REQUIRE(round_to_tf32(-(1.0f + 0x1p-11f - 0x1p-23f)) == -1.0f);
  // A carry through the whole mantissa raises the exponent.
  REQUIRE(round_to_tf32(2.0f - 0x1p-23f) == 2.0f);
  // Every result has its 13 low bits clear, and is within half a TF32 step.
  for (float x : {0.1f, -3.14159f, 1e-30f, 12345.678f}) {
    const float r = round_to_tf32(x);
    REQUIRE((float_bits(r) & 0x1fffu) == 0);
    REQUIRE(std::fabs(r - x) <= std::fabs(x) * 0x1p-11f);
  }
  // A subnormal keeps its 10 highest mantissa bits: steps of 2^-136.
  const float tiny = 1e-40f, tiny_r = round_to_tf32(tiny);
  REQUIRE((float_bits(tiny_r) & 0x1fffu) == 0);
  REQUIRE(std::fabs(tiny_r - tiny) <= 0x1p-137f);
  // Infinities stay, NaN stays NaN even when its payload lies in the dropped
  // bits, and the largest floats round to infinity as an IEEE conversion does.
  const float inf = std::numeric_limits<float>::infinity();
  REQUIRE(round_to_tf32(inf) == inf);
  REQUIRE(round_to_tf32(-inf) == -inf);
  REQUIRE(std::isnan(round_to_tf32(bits_float(0x7f800001u))));
  REQUIRE(std::isnan(round_to_tf32(std::numeric_limits<float>::quiet_NaN())));
  REQUIRE(round_to_tf32(std::numeric_limits<float>::max()) == inf);
  REQUIRE(round_to_tf32(0.0f) == 0.0f);
  REQUIRE(std::signbit(round_to_tf32(-0.0f)));
}
