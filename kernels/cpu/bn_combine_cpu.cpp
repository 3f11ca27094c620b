#include "kernels/cpu/bn_combine_cpu.h"

namespace lockstep::cpu {

void bn_combine_pack(const BnCombineLayer* layers, BnCombineSizes sizes, double weight, double* packed) {
  for (int l = 0; l < sizes.layers; ++l)
    for (int64_t c = 0; c < layers[l].channels; ++c) lockstep::bn_combine_pack(layers[l], l, c, weight, sizes, packed);
}

void bn_combine_var_terms(const BnCombineLayer* layers, BnCombineSizes sizes, double weight, double* packed) {
  for (int l = 0; l < sizes.layers; ++l)
    for (int64_t c = 0; c < layers[l].channels; ++c) lockstep::bn_combine_var_term(layers[l], c, weight, sizes, packed);
}

void bn_combine_update(const BnCombineLayer* layers, BnCombineSizes sizes, const double* packed) {
  for (int l = 0; l < sizes.layers; ++l)
    for (int64_t c = 0; c < layers[l].channels; ++c) lockstep::bn_combine_update(layers[l], l, c, sizes, packed);
}

}  // namespace lockstep::cpu
