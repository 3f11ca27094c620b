#pragma once
// CPU loops of the batch-norm combination phases (kernels/bn_combine.h) over
// a host table of `sizes.layers` layers.
#include "kernels/bn_combine.h"

namespace lockstep::cpu {

// Writes the weighted means and the counts: [0, C + L) of `packed`.
void bn_combine_pack(const BnCombineLayer* layers, BnCombineSizes sizes, double weight, double* packed);
// Writes the variance terms [C + L, 2C + L) around the combined means in [0, C).
void bn_combine_var_terms(const BnCombineLayer* layers, BnCombineSizes sizes, double weight, double* packed);
// Updates every layer's running statistics from the combined buffer.
void bn_combine_update(const BnCombineLayer* layers, BnCombineSizes sizes, const double* packed);

}  // namespace lockstep::cpu
