#pragma once
// CUDA launchers of the batch-norm combination phases (kernels/bn_combine.h):
// one launch per phase for all layers (a block row per layer), reading the
// layer table from device memory.
#include <cuda_runtime_api.h>

#include "kernels/bn_combine.h"

namespace lockstep::cuda {

// The widest layer's channel count, for the grid.
void bn_combine_pack(cudaStream_t stream, const BnCombineLayer* layers, BnCombineSizes sizes, int64_t max_channels,
                     double weight, double* packed);
void bn_combine_var_terms(cudaStream_t stream, const BnCombineLayer* layers, BnCombineSizes sizes,
                          int64_t max_channels, double weight, double* packed);
void bn_combine_update(cudaStream_t stream, const BnCombineLayer* layers, BnCombineSizes sizes, int64_t max_channels,
                       const double* packed);

}  // namespace lockstep::cuda
