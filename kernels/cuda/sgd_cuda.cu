// Fused SGD-momentum over the whole arena in one launch.
//
// Which elements get weight decay: the segments of an arena alternate between
// decayed (conv/linear weights) and not (biases, BN parameters), and every
// segment starts at a multiple of 4 elements, so decay is constant over each
// float4. The launcher turns the segment list into the sorted float4 indices
// where decay switches on or off ("toggles"), and passes them by value as a
// __grid_constant__ kernel parameter (up to 8000 of them fit in the 32 KB
// parameter space; a model with more switches gets one launch per 8000).
// A float4 at index i is decayed when an odd number of toggles is <= i. Each
// block binary-searches its first float4 once, then every thread walks
// forward over the few toggles inside the block's tile, so the table costs
// a handful of constant-cache reads per thread and nothing in device memory:
// the kernel moves only w, g and v (read 12 bytes, write 12 bytes per
// parameter, the gradient being cleared for the next step), and in precision
// bf16 the bf16 copy of w (2 more bytes written per parameter).
#include "kernels/cuda/sgd_cuda.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"

#include <algorithm>
#include <cstdint>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "kernels/adamw_math.h"
#include "kernels/bf16_math.h"
#include "kernels/ema_math.h"

namespace lockstep::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kVecsPerThread = 4;  // independent float4 loads in flight per thread
constexpr int64_t kVecsPerBlock = int64_t(kThreads) * kVecsPerThread;
constexpr int kSmallCapacity = 254;
constexpr int kLargeCapacity = 8000;

template <int Capacity> struct DecayToggles {
  int64_t first_vec;  // the launch covers float4s [first_vec, first_vec + vec_count) of the arena
  int64_t vec_count;
  int tail;           // trailing scalars after the last whole float4 (last launch only)
  int count;          // toggles used
  int initial;        // decay state (0/1) before the first toggle
  uint32_t at[Capacity];  // toggle positions in float4s from first_vec, ascending
};

template <int Capacity>
__device__ __forceinline__ int toggles_not_after(const DecayToggles<Capacity>& t, int64_t vec) {
  int lo = 0, hi = t.count;
  while (lo < hi) {
    int mid = (lo + hi) >> 1;
    if (static_cast<int64_t>(t.at[mid]) <= vec) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

__device__ __forceinline__ void update4(float4& w, float4& g, float4& v, float lr, float decay, const SgdHyper& h) {
  sgd_momentum_element(w.x, g.x, v.x, lr, h.momentum, decay, h.nesterov);
  sgd_momentum_element(w.y, g.y, v.y, lr, h.momentum, decay, h.nesterov);
  sgd_momentum_element(w.z, g.z, v.z, lr, h.momentum, decay, h.nesterov);
  sgd_momentum_element(w.w, g.w, v.w, lr, h.momentum, decay, h.nesterov);
}

// AdamW (kernels/adamw_math.h) on a float4: m in v, the second moment in s.
__device__ __forceinline__ void adamw4(float4& w, float4& g, float4& v, float4& s, const SgdHyper& h,
                                       const AdamwScalars& a, bool decayed) {
  adamw_element(w.x, g.x, v.x, s.x, h, a, decayed);
  adamw_element(w.y, g.y, v.y, s.y, h, a, decayed);
  adamw_element(w.z, g.z, v.z, s.z, h, a, decayed);
  adamw_element(w.w, g.w, v.w, s.w, h, a, decayed);
}

// The moving average of the updated weights (kernels/ema_math.h) on a float4.
__device__ __forceinline__ void ema4(float4& e, const float4& w, float weight) {
  e.x = ema_lerp(e.x, w.x, weight);
  e.y = ema_lerp(e.y, w.y, weight);
  e.z = ema_lerp(e.z, w.z, weight);
  e.w = ema_lerp(e.w, w.w, weight);
}

__device__ __forceinline__ ushort4 to_bf16(const float4& w) {
  return make_ushort4(float_to_bf16(w.x), float_to_bf16(w.y), float_to_bf16(w.z), float_to_bf16(w.w));
}

// Bf16: also writes the bf16 copy of the updated weights to wb. Adam: the
// AdamW update, with its second moment in s (unused otherwise). Ema: also
// moves the average of the updated fp32 weights in e.
template <int Capacity, bool Bf16, bool Adam, bool Ema>
__global__ void __launch_bounds__(kThreads)
    sgd_momentum_kernel(float* w, float* g, float* v, float* s, uint16_t* wb, float* e,
                        const __grid_constant__ DecayToggles<Capacity> toggles, const SgdHyper given) {
  SgdHyper hyper = given;
  if (hyper.lr_on_device) hyper.lr = *hyper.lr_on_device;
  // AdamW's scalars for the two rates an element can have (the backbone's
  // and the rest's), each thread working them out alike from the step.
  AdamwScalars rest{}, backbone{};
  if (Adam) {
    const uint64_t step = adamw_step_index(hyper);
    rest = adamw_scalars(hyper, hyper.lr, step);
    backbone = adamw_scalars(hyper, hyper.lr * hyper.lr_scale, step);
  }
  // The average's weight of this step, each thread working it out alike from the step.
  const float ema_w = Ema ? ema_weight(hyper.ema_decay, adamw_step_index(hyper)) : 0.0f;
  float4* w4 = reinterpret_cast<float4*>(w) + toggles.first_vec;
  float4* g4 = reinterpret_cast<float4*>(g) + toggles.first_vec;
  float4* v4 = reinterpret_cast<float4*>(v) + toggles.first_vec;
  float4* s4 = reinterpret_cast<float4*>(s) + toggles.first_vec;
  float4* e4 = reinterpret_cast<float4*>(e) + toggles.first_vec;
  const int64_t tile = static_cast<int64_t>(blockIdx.x) * kVecsPerBlock;

  float4 wr[kVecsPerThread], gr[kVecsPerThread], vr[kVecsPerThread], sr[kVecsPerThread], er[kVecsPerThread];
#pragma unroll
  for (int k = 0; k < kVecsPerThread; ++k) {
    int64_t i = tile + k * kThreads + threadIdx.x;
    if (i < toggles.vec_count) {
      wr[k] = w4[i];
      gr[k] = g4[i];
      vr[k] = v4[i];
      if (Adam) sr[k] = s4[i];
      if (Ema) er[k] = e4[i];
    }
  }
  if (hyper.grad_scale) {
    const float s = *hyper.grad_scale;
#pragma unroll
    for (int k = 0; k < kVecsPerThread; ++k) {
      gr[k].x *= s;
      gr[k].y *= s;
      gr[k].z *= s;
      gr[k].w *= s;
    }
  }
  int next = toggles_not_after(toggles, tile);
#pragma unroll
  for (int k = 0; k < kVecsPerThread; ++k) {
    int64_t i = tile + k * kThreads + threadIdx.x;
    if (i < toggles.vec_count) {
      while (next < toggles.count && static_cast<int64_t>(toggles.at[next]) <= i) ++next;
      const bool decayed = (next + toggles.initial) & 1;
      // The backbone ends at a multiple of 4 elements (the launcher checks): one rate per float4.
      const int64_t element = (toggles.first_vec + i) * 4;
      if (Adam) {
        adamw4(wr[k], gr[k], vr[k], sr[k], hyper, element < hyper.scaled_elements ? backbone : rest, decayed);
        s4[i] = sr[k];
      } else {
        const float decay = decayed ? hyper.weight_decay : 0.0f;
        update4(wr[k], gr[k], vr[k], element_lr(hyper, hyper.lr, element), decay, hyper);
      }
      if (Bf16) reinterpret_cast<ushort4*>(wb)[toggles.first_vec + i] = to_bf16(wr[k]);
      if (Ema) {
        ema4(er[k], wr[k], ema_w);
        e4[i] = er[k];
      }
      w4[i] = wr[k];
      v4[i] = vr[k];
      g4[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }

  if (toggles.tail > 0 && blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
    int64_t vec = toggles.vec_count;  // the partial float4 after the last whole one
    const bool decayed = (toggles_not_after(toggles, vec) + toggles.initial) & 1;
    int64_t base = (toggles.first_vec + vec) * 4;
    for (int t = 0; t < toggles.tail; ++t) {
      if (hyper.grad_scale) g[base + t] *= *hyper.grad_scale;
      if (Adam)
        adamw_element(w[base + t], g[base + t], v[base + t], s[base + t], hyper,
                      base + t < hyper.scaled_elements ? backbone : rest, decayed);
      else
        sgd_momentum_element(w[base + t], g[base + t], v[base + t], element_lr(hyper, hyper.lr, base + t),
                             hyper.momentum, decayed ? hyper.weight_decay : 0.0f, hyper.nesterov);
      if (Bf16) wb[base + t] = float_to_bf16(w[base + t]);
      if (Ema) e[base + t] = ema_lerp(e[base + t], w[base + t], ema_w);
    }
  }
}

// Gradient clipping's two kernels: each block sums the squares of its
// grid-stride share in double, then one block adds the blocks' sums in block
// order and writes the clip coefficient, so every replica (holding the same
// all-reduced gradients) computes the same bits.
constexpr int kClipBlocks = 512;

__global__ void __launch_bounds__(detail::kThreads) square_sums_kernel(const float* g, int64_t n, double* partial) {
  double acc = 0.0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    acc += double(g[i]) * double(g[i]);
  const double total = detail::block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void __launch_bounds__(detail::kThreads)
    clip_coefficient_kernel(const double* partial, int blocks, float max_norm, float* scale) {
  double acc = 0.0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) acc += partial[b];
  const double total = detail::block_sum(acc);
  if (threadIdx.x == 0) *scale = clip_coefficient(total, max_norm);
}

template <int Capacity, bool Adam, bool Ema>
void launch_kernel(cudaStream_t stream, float* w, float* g, float* v, float* s, uint16_t* wb, float* e,
               const DecayToggles<Capacity>& toggles, const SgdHyper& hyper) {
  int64_t blocks = std::max<int64_t>(1, (toggles.vec_count + kVecsPerBlock - 1) / kVecsPerBlock);
  if (wb)
    LS_LAUNCH(static_cast<unsigned>(blocks), kThreads, 0, stream,
              sgd_momentum_kernel<Capacity, true, Adam, Ema>)(w, g, v, s, wb, e, toggles, hyper);
  else
    LS_LAUNCH(static_cast<unsigned>(blocks), kThreads, 0, stream,
              sgd_momentum_kernel<Capacity, false, Adam, Ema>)(w, g, v, s, wb, e, toggles, hyper);
  LS_CUDA_CHECK_LAUNCH("sgd_momentum_kernel");
}

template <int Capacity, bool Adam>
void launch_as(cudaStream_t stream, float* w, float* g, float* v, float* s, uint16_t* wb, float* e,
               const DecayToggles<Capacity>& toggles, const SgdHyper& hyper) {
  if (e)
    launch_kernel<Capacity, Adam, true>(stream, w, g, v, s, wb, e, toggles, hyper);
  else
    launch_kernel<Capacity, Adam, false>(stream, w, g, v, s, wb, e, toggles, hyper);
}

template <int Capacity>
void launch(cudaStream_t stream, float* w, float* g, float* v, float* s, uint16_t* wb, float* e, int64_t first_vec,
            int64_t vec_count, int tail, int initial, const uint32_t* toggles_begin, int count, const SgdHyper& hyper) {
  DecayToggles<Capacity> toggles{};
  toggles.first_vec = first_vec;
  toggles.vec_count = vec_count;
  toggles.tail = tail;
  toggles.count = count;
  toggles.initial = initial;
  for (int i = 0; i < count; ++i) toggles.at[i] = static_cast<uint32_t>(toggles_begin[i] - first_vec);
  if (hyper.adamw)
    launch_as<Capacity, true>(stream, w, g, v, s, wb, e, toggles, hyper);
  else
    launch_as<Capacity, false>(stream, w, g, v, s, wb, e, toggles, hyper);
}

}  // namespace

void sgd_momentum(cudaStream_t stream, float* w, float* g, float* v, int64_t total,
                  const std::vector<ArenaSegment>& segments, const SgdHyper& hyper, uint16_t* wb, float* s,
                  float* e) {
  if (total <= 0) return;
  LS_CHECK(!hyper.adamw || s, "sgd_momentum: AdamW without a second-moment arena");
  LS_CHECK((hyper.ema_decay > 0.0) == (e != nullptr), "sgd_momentum: a moving average needs both its decay and its arena");
  for (const void* p : {static_cast<const void*>(w), static_cast<const void*>(g), static_cast<const void*>(v),
                        static_cast<const void*>(wb), static_cast<const void*>(s), static_cast<const void*>(e)})
    LS_CHECK(reinterpret_cast<uintptr_t>(p) % 16 == 0, "sgd_momentum: arena pointer ", p, " is not 16-byte aligned");
  const int64_t vecs = total / 4;
  LS_CHECK(vecs < (int64_t(1) << 32), "sgd_momentum: arena of ", total, " elements is too large for one update");
  LS_CHECK(hyper.scaled_elements % 4 == 0 || hyper.scaled_elements >= total, "sgd_momentum: the backbone's ",
           hyper.scaled_elements, " elements do not end at a multiple of 4 in an arena of ", total);

  // Float4 indices where decay switches, from the segment list.
  std::vector<uint32_t> toggles;
  bool decay = false;
  int64_t previous_end = 0;
  for (const ArenaSegment& seg : segments) {
    LS_CHECK(seg.offset % 4 == 0 && seg.offset >= previous_end && seg.count >= 0 && seg.offset + seg.count <= total,
             "sgd_momentum: segment at ", seg.offset, " of ", seg.count, " elements is misplaced in an arena of ",
             total, " (segments must be sorted, start at multiples of 4 and lie inside the arena)");
    previous_end = seg.offset + seg.count;
    if (seg.count > 0 && seg.decay != decay) {
      toggles.push_back(static_cast<uint32_t>(seg.offset / 4));
      decay = seg.decay;
    }
  }
  const int tail = static_cast<int>(total - vecs * 4);
  const int count = static_cast<int>(toggles.size());

  if (count <= kSmallCapacity) {
    launch<kSmallCapacity>(stream, w, g, v, s, wb, e, 0, vecs, tail, 0, toggles.data(), count, hyper);
    return;
  }
  // One launch per kLargeCapacity toggles: piece p starts at its first toggle
  // (the first piece at 0) and knows the decay state it starts in.
  for (int first = 0; first < count; first += kLargeCapacity) {
    int last = std::min(count, first + kLargeCapacity);
    int64_t begin = first == 0 ? 0 : toggles[first];
    int64_t end = last == count ? vecs : toggles[last];
    int initial = first % 2;  // toggles before this piece: an even count leaves decay off
    launch<kLargeCapacity>(stream, w, g, v, s, wb, e, begin, end - begin, last == count ? tail : 0, initial,
                           toggles.data() + first, last - first, hyper);
  }
}

namespace {
// The moving average of the running statistics: one thread per value, the
// weight worked out from the step in each thread (device memory in a replayed graph).
__global__ void __launch_bounds__(detail::kThreads)
    ema_average_kernel(float* average, const float* value, int64_t n, double decay, uint64_t step,
                       const uint64_t* step_on_device) {
  const float weight = ema_weight(decay, step_on_device ? *step_on_device : step);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    average[i] = ema_lerp(average[i], value[i], weight);
}
}  // namespace

void ema_average(cudaStream_t stream, float* average, const float* value, int64_t n, double decay, uint64_t step,
                 const uint64_t* step_on_device) {
  if (n <= 0) return;
  const int blocks = static_cast<int>(std::min<int64_t>(1024, (n + detail::kThreads - 1) / detail::kThreads));
  LS_LAUNCH(static_cast<unsigned>(blocks), detail::kThreads, 0, stream, ema_average_kernel)(average, value, n, decay,
                                                                                           step, step_on_device);
  LS_CUDA_CHECK_LAUNCH("ema_average_kernel");
}

size_t clip_scale_scratch_bytes() { return kClipBlocks * sizeof(double); }

void clip_scale(cudaStream_t stream, const float* g, int64_t total, float max_norm, void* scratch, float* scale) {
  LS_CHECK(max_norm > 0.0f, "clip_scale: the largest gradient norm must be positive, got ", max_norm);
  const int blocks = static_cast<int>(std::min<int64_t>(kClipBlocks, std::max<int64_t>(1, (total + detail::kThreads - 1) / detail::kThreads)));
  double* partial = static_cast<double*>(scratch);
  LS_LAUNCH(static_cast<unsigned>(blocks), detail::kThreads, 0, stream, square_sums_kernel)(g, total, partial);
  LS_CUDA_CHECK_LAUNCH("square_sums_kernel");
  LS_LAUNCH(1, detail::kThreads, 0, stream, clip_coefficient_kernel)(partial, blocks, max_norm, scale);
  LS_CUDA_CHECK_LAUNCH("clip_coefficient_kernel");
}

}  // namespace lockstep::cuda
