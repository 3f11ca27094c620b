#pragma once
// Element-wise comparison of a GPU result with the CPU reference:
// |gpu - cpu| <= atol + rtol * |cpu|, reporting the first index that fails.
#include <catch2/catch.hpp>

#include <cmath>
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

}  // namespace lockstep::testing
