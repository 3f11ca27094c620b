// The memory-format conversion: a 32 x 32 tile per block through shared
// memory, so both the reads of x and the writes of y are whole rows of a warp
// (coalesced) whichever way the conversion goes. The tile has 33 columns so a
// warp reading a tile column hits 32 different banks. Blocks are 256 threads
// as 32 x 8: each thread moves four values of its tile. A template on the
// element type: float, or bf16's raw bits (moved, never converted).
#include "kernels/cuda/transpose_cuda.h"

#include <algorithm>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/bf16_math.h"
#include "kernels/cuda/launch_util.cuh"

namespace lockstep::cuda {
namespace {

using detail::kThreads;
constexpr int kTile = 32;
constexpr int kRowsPerPass = kThreads / kTile;  // 8
constexpr int64_t kMaxGridY = 65535;            // CUDA's limit on gridDim.y

// blockIdx.x numbers the tiles of one matrix (row-major over tile rows and
// columns); blockIdx.y strides over the batch.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    transpose_tiles(const T* x, T* y, int64_t batch, int64_t rows, int64_t cols, int64_t tile_cols) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t tile_row = blockIdx.x / tile_cols, tile_col = blockIdx.x % tile_cols;
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    const T* in = x + b * rows * cols;
    T* out = y + b * rows * cols;
    const int64_t j = tile_col * kTile + tx;  // column read
    for (int k = ty; k < kTile; k += kRowsPerPass) {
      const int64_t i = tile_row * kTile + k;
      if (i < rows && j < cols) tile[k][tx] = in[i * cols + j];
    }
    __syncthreads();
    const int64_t i = tile_row * kTile + tx;  // column written (a row of x)
    for (int k = ty; k < kTile; k += kRowsPerPass) {
      const int64_t jj = tile_col * kTile + k;
      if (i < rows && jj < cols) out[jj * rows + i] = tile[tx][k];
    }
    __syncthreads();  // the tile is refilled for the next matrix
  }
}

}  // namespace

template <typename T>
void transpose_planes(cudaStream_t stream, const T* x, T* y, int64_t batch, int64_t rows, int64_t cols) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return;
  const int64_t tile_rows = (rows + kTile - 1) / kTile, tile_cols = (cols + kTile - 1) / kTile;
  LS_CHECK(tile_rows * tile_cols <= static_cast<int64_t>(INT32_MAX), "transpose_planes: matrices of ", rows, " x ",
           cols, " need more tiles than one grid axis holds");
  const dim3 grid(static_cast<unsigned>(tile_rows * tile_cols), static_cast<unsigned>(std::min(batch, kMaxGridY)));
  LS_LAUNCH(grid, kThreads, 0, stream, transpose_tiles<T>)(x, y, batch, rows, cols, tile_cols);
  LS_CUDA_CHECK_LAUNCH("transpose_planes");
}

template void transpose_planes<float>(cudaStream_t, const float*, float*, int64_t, int64_t, int64_t);
template void transpose_planes<bf16_bits>(cudaStream_t, const bf16_bits*, bf16_bits*, int64_t, int64_t, int64_t);

}  // namespace lockstep::cuda
