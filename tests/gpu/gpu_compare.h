#pragma once
// Element-wise comparison of a GPU result with the CPU reference:
// |gpu - cpu| <= atol + rtol * |cpu|, reporting the first index that fails;
// and the scaled form used for reductions (convolutions, GEMMs, statistics),
// whose rounding error follows the size of the terms summed rather than of
// the result: |gpu - cpu| <= rtol * (|cpu| + rms(cpu)).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace lockstep::testing {

inline void require_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double rtol = 1e-5,
                          double atol = 1e-7) {
  REQUIRE(gpu.size() == cpu.size());
  for (size_t i = 0; i < gpu.size(); ++i) {
    double tolerance = atol + rtol * std::fabs(cpu[i]);
    if (!(std::fabs(double(gpu[i]) - double(cpu[i])) <= tolerance)) {
      INFO("element " << i << " of " << gpu.size() << ": gpu " << gpu[i] << ", cpu " << cpu[i]);
      REQUIRE(std::fabs(double(gpu[i]) - double(cpu[i])) <= tolerance);
    }
  }
}

inline double rms(const std::vector<float>& v) {
  double sum = 0.0;
  for (float x : v) sum += double(x) * double(x);
  return v.empty() ? 0.0 : std::sqrt(sum / double(v.size()));
}

inline void require_close_scaled(const std::vector<float>& gpu, const std::vector<float>& cpu, double rtol,
                                 const std::string& what) {
  REQUIRE(gpu.size() == cpu.size());
  const double floor = rms(cpu);
  for (size_t i = 0; i < gpu.size(); ++i) {
    double tolerance = rtol * (std::fabs(cpu[i]) + floor);
    if (!(std::fabs(double(gpu[i]) - double(cpu[i])) <= tolerance)) {
      INFO(what << ": element " << i << " of " << gpu.size() << ": gpu " << gpu[i] << ", cpu " << cpu[i]
                << " (rms " << floor << ", rtol " << rtol << ")");
      REQUIRE(std::fabs(double(gpu[i]) - double(cpu[i])) <= tolerance);
    }
  }
}

// ||gpu - cpu|| / ||cpu|| <= rtol, over the whole tensor.
inline void require_normwise_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double rtol,
                                   const std::string& what) {
  REQUIRE(gpu.size() == cpu.size());
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    diff += (double(gpu[i]) - double(cpu[i])) * (double(gpu[i]) - double(cpu[i]));
    norm += double(cpu[i]) * double(cpu[i]);
  }
  const double relative = norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  INFO(what << ": normwise relative difference " << relative << " (rtol " << rtol << ")");
  REQUIRE(relative <= rtol);
}

// The same floats, bit for bit (NaN payloads and signed zeros included).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace lockstep::testing
