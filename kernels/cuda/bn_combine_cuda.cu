// Batch-norm combination: blockIdx.y picks the layer, the threads of the
// block row stride over its channels. Every value is written by one thread
// from the same inputs as the CPU loop, so both give the same bits.
#include "kernels/cuda/bn_combine_cuda.h"

#include <algorithm>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "kernels/cuda/launch.cuh"

namespace lockstep::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxBlocksPerLayer = 64;

__global__ void __launch_bounds__(kThreads)
    pack_kernel(const BnCombineLayer* layers, BnCombineSizes sizes, double weight, double* packed) {
  const int l = blockIdx.y;
  const BnCombineLayer layer = layers[l];
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < layer.channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x)
    lockstep::bn_combine_pack(layer, l, c, weight, sizes, packed);
}

__global__ void __launch_bounds__(kThreads)
    var_terms_kernel(const BnCombineLayer* layers, BnCombineSizes sizes, double weight, double* packed) {
  const BnCombineLayer layer = layers[blockIdx.y];
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < layer.channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x)
    lockstep::bn_combine_var_term(layer, c, weight, sizes, packed);
}

__global__ void __launch_bounds__(kThreads)
    update_kernel(const BnCombineLayer* layers, BnCombineSizes sizes, const double* packed) {
  const int l = blockIdx.y;
  const BnCombineLayer layer = layers[l];
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < layer.channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x)
    lockstep::bn_combine_update(layer, l, c, sizes, packed);
}

dim3 grid_for(BnCombineSizes sizes, int64_t max_channels) {
  LS_CHECK(sizes.layers > 0 && sizes.layers <= 65535, "batch-norm combination of ", sizes.layers,
           " layers (1..65535)");
  const int64_t blocks = std::clamp<int64_t>((max_channels + kThreads - 1) / kThreads, 1, kMaxBlocksPerLayer);
  return dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(sizes.layers));
}

}  // namespace

void bn_combine_pack(cudaStream_t stream, const BnCombineLayer* layers, BnCombineSizes sizes, int64_t max_channels,
                     double weight, double* packed) {
  LS_LAUNCH(grid_for(sizes, max_channels), kThreads, 0, stream, pack_kernel)(layers, sizes, weight, packed);
  LS_CUDA_CHECK_LAUNCH("bn_combine_pack");
}

void bn_combine_var_terms(cudaStream_t stream, const BnCombineLayer* layers, BnCombineSizes sizes,
                          int64_t max_channels, double weight, double* packed) {
  LS_LAUNCH(grid_for(sizes, max_channels), kThreads, 0, stream, var_terms_kernel)(layers, sizes, weight, packed);
  LS_CUDA_CHECK_LAUNCH("bn_combine_var_terms");
}

void bn_combine_update(cudaStream_t stream, const BnCombineLayer* layers, BnCombineSizes sizes, int64_t max_channels,
                       const double* packed) {
  LS_LAUNCH(grid_for(sizes, max_channels), kThreads, 0, stream, update_kernel)(layers, sizes, packed);
  LS_CUDA_CHECK_LAUNCH("bn_combine_update");
}

}  // namespace lockstep::cuda
