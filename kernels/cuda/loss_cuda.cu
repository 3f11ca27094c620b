// Softmax cross-entropy: a warp per row finds the row's maximum and argmax,
// its log-sum-exp and (optionally) its gradient with the lanes striding over
// the classes; each block sums its rows' losses and hits in a fixed order and
// a one-block kernel sums the blocks' partial results, again in a fixed order.
// A bad label marks the smallest offending row in the result, which the host
// checks after the read-back. Logits and their gradient are templates on
// their stored type T (float or bf16, kernels/stored_type.h): the math in
// float, the loss in double, the gradient rounded once as it is stored.
#include "kernels/cuda/loss_cuda.h"

#include <algorithm>
#include <cfloat>
#include <climits>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/loss_math.h"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = kWarpsPerBlock * 32;
constexpr int kMaxBlocks = 1024;
constexpr unsigned kFullMask = 0xffffffffu;

struct LossPartial {
  double loss_sum;
  unsigned long long correct;
};

constexpr size_t kPartialsOffset = 256;  // LossResult first, then one LossPartial per block
static_assert(sizeof(LossResult) <= kPartialsOffset);
constexpr size_t kDeviceScratchBytes = kPartialsOffset + kMaxBlocks * sizeof(LossPartial);
constexpr size_t kHostScratchBytes = sizeof(LossResult) + sizeof(int32_t);

template <typename T>
__global__ void __launch_bounds__(kThreads)
    cross_entropy_rows(const T* logits, const int32_t* labels, int64_t rows, int classes, float scale, T* grad,
                       float smoothing, bool mixed, LossPartial* partials, LossResult* result) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  double loss_sum = 0.0;
  unsigned long long correct = 0;

  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp; r < rows;
       r += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    const T* z = logits + r * classes;
    // Maximum and first index of it: each lane scans its classes in order,
    // then the warp keeps the larger value, or the smaller index on a tie,
    // which is row_argmax's answer.
    float best = -INFINITY;
    int best_index = INT_MAX;
    for (int k = lane; k < classes; k += 32) {
      float value = load(z, k);
      if (best_index == INT_MAX || value > best) {
        best = value;
        best_index = k;
      }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      float other = __shfl_xor_sync(kFullMask, best, offset);
      int other_index = __shfl_xor_sync(kFullMask, best_index, offset);
      if (other > best || (other == best && other_index < best_index) || best_index == INT_MAX) {
        if (other_index != INT_MAX) {
          best = other;
          best_index = other_index;
        }
      }
    }
    float sum = 0.0f;
    for (int k = lane; k < classes; k += 32) sum += expf(load(z, k) - best);
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(kFullMask, sum, offset);
    const float logsumexp = best + logf(sum);
    // The mean logit, which only the smoothed loss needs.
    float z_sum = 0.0f;
    if (smoothing != 0.0f) {
      for (int k = lane; k < classes; k += 32) z_sum += load(z, k);
      for (int offset = 16; offset > 0; offset >>= 1) z_sum += __shfl_xor_sync(kFullMask, z_sum, offset);
    }

    // A plain row is a mixed one with label b = a and lam = 1, whose targets
    // are smoothed_target's to the bit (kernels/loss_math.h).
    const MixedTarget t = mixed ? mixed_target_of(labels + r * kMixedTargetWidth) : MixedTarget{labels[r], labels[r], 1.0f};
    const int label = t.a;
    const bool valid = label >= 0 && label < classes && t.b >= 0 && t.b < classes;
    if (lane == 0) {
      if (valid) {
        const float z_mean = z_sum / static_cast<float>(classes);
        loss_sum += mixed ? mixed_row_loss(logsumexp, load(z, label), load(z, t.b), z_mean, t.lam, smoothing)
                          : row_loss(logsumexp, load(z, label), z_mean, smoothing);
        correct += best_index == label ? 1 : 0;
      } else {
        atomicMin(&result->bad_row, static_cast<unsigned long long>(r));
      }
    }
    if (grad)
      for (int k = lane; k < classes; k += 32)
        store(grad, r * classes + k,
              cross_entropy_grad(load(z, k), logsumexp,
                                 mixed ? mixed_target(k == label, k == t.b, t.lam, smoothing, classes)
                                       : smoothed_target(k == label, smoothing, classes),
                                 scale));
  }

  __shared__ double warp_loss[kWarpsPerBlock];
  __shared__ unsigned long long warp_correct[kWarpsPerBlock];
  if (lane == 0) {
    warp_loss[warp] = loss_sum;
    warp_correct[warp] = correct;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    LossPartial partial{0.0, 0};
    for (int w = 0; w < kWarpsPerBlock; ++w) {
      partial.loss_sum += warp_loss[w];
      partial.correct += warp_correct[w];
    }
    partials[blockIdx.x] = partial;
  }
}

__global__ void __launch_bounds__(kThreads) sum_partials(const LossPartial* partials, int count, LossResult* result) {
  __shared__ double loss[kThreads];
  __shared__ unsigned long long correct[kThreads];
  double l = 0.0;
  unsigned long long c = 0;
  for (int i = threadIdx.x; i < count; i += kThreads) {
    l += partials[i].loss_sum;
    c += partials[i].correct;
  }
  loss[threadIdx.x] = l;
  correct[threadIdx.x] = c;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) {
      loss[threadIdx.x] += loss[threadIdx.x + stride];
      correct[threadIdx.x] += correct[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    result->loss_sum = loss[0];
    result->correct = correct[0];
  }
}

}  // namespace

namespace {
// Queues the two kernels that leave the pass's sums in `result`.
template <typename T>
void queue_loss_pass(cudaStream_t stream, void* device_scratch, const T* logits, const int32_t* labels, int64_t rows,
                     int classes, float scale, T* grad, float smoothing, bool mixed, LossResult* result) {
  auto* partials = reinterpret_cast<LossPartial*>(static_cast<char*>(device_scratch) + kPartialsOffset);
  const int blocks = static_cast<int>(std::min<int64_t>(kMaxBlocks, (rows + kWarpsPerBlock - 1) / kWarpsPerBlock));
  // All bytes 0xff: bad_row = kNoBadRow.
  LS_CUDA_CHECK(cudaMemsetAsync(&result->bad_row, 0xff, sizeof(result->bad_row), stream));
  LS_LAUNCH(blocks, kThreads, 0, stream, cross_entropy_rows<T>)(logits, labels, rows, classes, scale, grad, smoothing, mixed,
                                                                 partials, result);
  LS_CUDA_CHECK_LAUNCH("cross_entropy_rows");
  LS_LAUNCH(1, kThreads, 0, stream, sum_partials)(partials, blocks, result);
  LS_CUDA_CHECK_LAUNCH("sum_partials");
}
}  // namespace

LossSums loss_sums_of(cudaStream_t stream, const LossResult& host_result, const int32_t* labels, int classes,
                      bool mixed) {
  if (host_result.bad_row != kNoBadRow) {
    int64_t row = static_cast<int64_t>(host_result.bad_row);
    int32_t pair[2] = {0, 0};
    const int width = mixed ? kMixedTargetWidth : 1;
    LS_CUDA_CHECK(cudaMemcpyAsync(pair, labels + row * width, (mixed ? 2 : 1) * sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, stream));
    LS_CUDA_CHECK(cudaStreamSynchronize(stream));
    const int32_t label = pair[0] >= 0 && pair[0] < classes ? pair[1] : pair[0];
    LS_FAIL("softmax_cross_entropy: label ", label, " of sample ", row, " is outside [0, ", classes, ")");
  }
  LossSums sums;
  sums.loss_sum = host_result.loss_sum;
  sums.correct = static_cast<int64_t>(host_result.correct);
  return sums;
}

template <typename T>
void softmax_cross_entropy_queued(cudaStream_t stream, const LossScratch& scratch, const T* logits,
                                  const int32_t* labels, int64_t rows, int classes, float scale, T* grad,
                                  LossResult* result, LossResult* host_result, float smoothing, bool mixed) {
  LS_CHECK(classes > 0, "softmax_cross_entropy: ", classes, " classes");
  LS_CHECK(scratch.device_bytes >= kDeviceScratchBytes, "softmax_cross_entropy: scratch of ", scratch.device_bytes,
           " device bytes, needs ", kDeviceScratchBytes);
  if (rows <= 0) {
    LS_CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(LossResult), stream));
    LS_CUDA_CHECK(cudaMemsetAsync(&result->bad_row, 0xff, sizeof(result->bad_row), stream));
  } else {
    queue_loss_pass(stream, scratch.device, logits, labels, rows, classes, scale, grad, smoothing, mixed, result);
  }
  LS_CUDA_CHECK(cudaMemcpyAsync(host_result, result, sizeof(LossResult), cudaMemcpyDeviceToHost, stream));
}

template <typename T>
LossSums softmax_cross_entropy(cudaStream_t stream, const LossScratch& scratch, const T* logits,
                               const int32_t* labels, int64_t rows, int classes, float scale, T* grad,
                               float smoothing, bool mixed) {
  if (rows <= 0) return LossSums{};
  LS_CHECK(classes > 0, "softmax_cross_entropy: ", classes, " classes");
  LS_CHECK(scratch.device_bytes >= kDeviceScratchBytes && scratch.host_bytes >= kHostScratchBytes,
           "softmax_cross_entropy: scratch of ", scratch.device_bytes, " device and ", scratch.host_bytes,
           " host bytes, needs ", kDeviceScratchBytes, " and ", kHostScratchBytes);
  auto* result = static_cast<LossResult*>(scratch.device);
  queue_loss_pass(stream, scratch.device, logits, labels, rows, classes, scale, grad, smoothing, mixed, result);
  auto* host = static_cast<LossResult*>(scratch.host);
  LS_CUDA_CHECK(cudaMemcpyAsync(host, result, sizeof(LossResult), cudaMemcpyDeviceToHost, stream));
  LS_CUDA_CHECK(cudaStreamSynchronize(stream));
  return loss_sums_of(stream, *host, labels, classes, mixed);
}

#define LS_INSTANTIATE(T)                                                                                        \
  template LossSums softmax_cross_entropy<T>(cudaStream_t, const LossScratch&, const T*, const int32_t*, int64_t, \
                                             int, float, T*, float, bool);                                       \
  template void softmax_cross_entropy_queued<T>(cudaStream_t, const LossScratch&, const T*, const int32_t*,      \
                                                int64_t, int, float, T*, LossResult*, LossResult*, float, bool);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE

}  // namespace lockstep::cuda
