#pragma once
// Sums of float gradients over replicas that do not depend on how the
// replicas are grouped. A float has a 24-bit significand and a double 53, so
// a double holds the exact sum of a few floats whose magnitudes lie within
// about 2^26 of each other (the gradients of one parameter over replicas,
// almost always). An exact sum is the same whatever the order or grouping of
// its terms: one process summing six replicas, and three processes each
// summing two and then their partial sums over MPI, reach the same double,
// rounded to float once at the end, so the same bits. (Where a sum is not
// exact, the groupings' doubles differ in their last bits and their floats
// only where those land on a float rounding boundary.)
// The sum of two floats rounded once equals their float sum, so two replicas
// give what a float addition gives.
#include <cstdint>

namespace lockstep {

// out[i] = sum over r < n of sources[r][i] (in r order, in double) for i in [begin, end).
inline void sum_floats_in_double(const float* const* sources, int n, int64_t begin, int64_t end, double* out) {
  for (int64_t i = begin; i < end; ++i) out[i] = sources[0][i];
  for (int r = 1; r < n; ++r) {
    const float* src = sources[r];
    for (int64_t i = begin; i < end; ++i) out[i] += src[i];
  }
}

// The same sum, rounded once to float.
inline void sum_floats_rounded_once(const float* const* sources, int n, int64_t begin, int64_t end, float* out) {
  for (int64_t i = begin; i < end; ++i) {
    double sum = sources[0][i];
    for (int r = 1; r < n; ++r) sum += sources[r][i];
    out[i] = static_cast<float>(sum);
  }
}

inline void round_to_floats(const double* sums, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(sums[i]);
}

}  // namespace lockstep
