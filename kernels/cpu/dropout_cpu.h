#pragma once
// CPU reference dropout. Element i of these n draws counter first_index + i
// of `key` (see kernels/dropout_math.h), so a replica passes the global index
// of its first element and draws what one replica over the whole batch would.
#include <cstdint>

namespace lockstep::cpu {

void dropout_forward(const float* x, float* y, int64_t n, uint64_t key, uint64_t first_index, float p);
// dx = dy masked and scaled like the forward pass (or added to dx when accumulate).
void dropout_backward(const float* dy, float* dx, int64_t n, uint64_t key, uint64_t first_index, float p,
                      bool accumulate);

}  // namespace lockstep::cpu
