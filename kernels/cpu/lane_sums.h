#pragma once
// Sums over one row of floats that vectorise and still lose nothing to
// rounding on large batches: 16 independent float accumulators per term (the
// compiler keeps them in vector registers), whose totals then join doubles.
// A row is short (one image plane), so the float part stays precise.
#include <array>
#include <cstdint>

namespace lockstep::cpu {

// totals[k] += sum over j in [0, n) of term(j)[k], for the Terms terms that
// term(j) returns as a std::array<float, Terms>.
template <int Terms, class Term>
void add_lane_sums(int64_t n, Term term, double* totals) {
  constexpr int lanes = 16;
  float acc[Terms][lanes] = {};
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes)
    for (int l = 0; l < lanes; ++l) {
      const std::array<float, Terms> t = term(j + l);
      for (int k = 0; k < Terms; ++k) acc[k][l] += t[k];
    }
  for (; j < n; ++j) {
    const std::array<float, Terms> t = term(j);
    for (int k = 0; k < Terms; ++k) acc[k][0] += t[k];
  }
  for (int k = 0; k < Terms; ++k)
    for (int l = 0; l < lanes; ++l) totals[k] += acc[k][l];
}

}  // namespace lockstep::cpu
