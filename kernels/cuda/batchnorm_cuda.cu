// Batch normalisation kernels. Statistics, in one pass over the input: each
// thread sums its values' shifts d = x - shift and their squares d * d in
// double (kernels/bn_math.h, bn_shifted_moments), the block combines them in
// a fixed order into one partial sum per (channel, run), and the runs' partial
// sums are added in run order by whoever needs the total; the gradient sums
// likewise. Who sums what (channel_reduce.cuh): NCHW, one block per (channel,
// run of samples), groups of threads sized to the plane walking whole planes,
// so every thread works even on 4x4 planes and no value needs an integer
// division; NHWC (channels last), one block per (tile of up to 32 channels,
// run of pixels), consecutive threads reading consecutive channels of a
// pixel, so a warp reads whole rows. The order is a pure function of the
// shape and the format: the same bits on every device and schedule, but NHWC
// and NCHW sum in different orders and may differ in a statistic's last bit.
// Element-wise passes walk whole planes (NCHW, one channel each) or the flat
// order with a channel fixed per thread (NHWC; for_each_value). The images (x,
// y, dy, dx, the shortcut and its gradient) are templates on their stored
// type T, float or bf16 (kernels/stored_type.h): every value is widened as it
// is read and rounded once as it is written, the math and sums as in FP32
// storage; the per-channel arrays are FP32 whatever T is.
#include "kernels/cuda/batchnorm_cuda.h"

#include <algorithm>
#include <climits>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "kernels/bn_math.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/channel_reduce.cuh"
#include "kernels/cuda/launch_util.cuh"
#include "kernels/elementwise_math.h"
#include "kernels/stored_type.h"

namespace lockstep::cuda {
namespace {

using detail::kThreads;
using namespace channel_reduce;

// The value each channel's sums are shifted by (kernels/bn_math.h,
// bn_shifted_moments): the channel's first value, of sample 0.
template <typename T> __device__ __forceinline__ double channel_shift(const T* x, const Layout& l, int64_t c) {
  return l.n * l.spatial > 0 ? static_cast<double>(load(x, value_offset(l, 0, c, 0))) : 0.0;
}

// One pass over the input: each run's sums of d = x - shift and d * d.
template <typename T>
__global__ void __launch_bounds__(kThreads) run_shifted_moments(const T* x, Layout l, double* sums, double* squares) {
  const int64_t c = run_channel(l);
  const double shift = c < l.channels ? channel_shift(x, l, c) : 0.0;
  double acc = 0.0, acc2 = 0.0;
  for_each_in_run(l, [&](int64_t o) {
    const double d = load(x, o) - shift;
    acc += d;
    acc2 += d * d;
  });
  write_run_sum(l, acc, sums);
  write_run_sum(l, acc2, squares);
}

template <typename T>
__global__ void finish_statistics(const T* x, Layout l, const double* sums, const double* squares, float eps,
                                  float* batch_mean, float* batch_var, float* saved_mean, float* saved_inv_std) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= l.channels) return;
  const BnMoments m = bn_shifted_moments(channel_total(sums, c, l.splits), channel_total(squares, c, l.splits),
                                         static_cast<double>(l.n * l.spatial), channel_shift(x, l, c));
  const float var = static_cast<float>(m.var);
  batch_mean[c] = saved_mean[c] = static_cast<float>(m.mean);
  batch_var[c] = var;
  saved_inv_std[c] = bn_inv_std(var, eps);
}

// Relu: batch norm + ReLU fused, the output clamped at 0; a non-null
// shortcut is added before the clamp (the residual join).
template <bool Relu, typename T>
__global__ void __launch_bounds__(kThreads)
    normalize(const T* x, const T* shortcut, T* y, Layout l, const float* mean, const float* inv_std,
              const float* gamma, const float* beta) {
  for_each_value(l, [&](uint32_t c, int64_t i) {
    float v = bn_normalize(load(x, i), mean[c], inv_std[c], gamma[c], beta[c]);
    if (shortcut) v += load(shortcut, i);
    store(y, i, Relu ? relu_forward(v) : v);
  });
}

// The gradient the batch-norm backward passes read: dy, or with the ReLU
// fused, the ReLU's gradient of dy from its output y.
template <bool Relu, typename T> __device__ __forceinline__ float grad_at(const T* dy, const T* y, int64_t i) {
  return Relu ? relu_backward(load(y, i), load(dy, i)) : load(dy, i);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    normalize_eval(const T* x, T* y, Layout l, const float* running_mean, const float* running_var, float eps,
                   const float* gamma, const float* beta) {
  for_each_value(l, [&](uint32_t c, int64_t i) {
    store(y, i, bn_normalize(load(x, i), running_mean[c], bn_inv_std(running_var[c], eps), gamma[c], beta[c]));
  });
}

// What the gradient-sums pass does with the gradient it forms besides
// summing it: nothing, or (batch norm + add + ReLU) store it as the
// shortcut's gradient, written or added.
enum class Shortcut { none, write, add };

// sum(dy) and sum(dy * xhat) of a run, xhat formed in float as the CPU does.
// A written shortcut gradient is exact in bf16 too (the ReLU mask of a
// stored dy is dy or 0), so the input-gradient pass may read it back.
template <bool Relu, Shortcut Store, typename T>
__global__ void __launch_bounds__(kThreads)
    run_gradient_sums(const T* x, const T* dy, const T* y, Layout l, const float* mean, const float* inv_std,
                      double* partial_dy, double* partial_dy_xhat, T* dshortcut) {
  const int64_t c = run_channel(l);
  const bool summing = c < l.channels;  // false: a lane past the last channel of an NHWC tile
  const float m = summing ? mean[c] : 0.0f, inv = summing ? inv_std[c] : 0.0f;
  double sum_dy = 0.0, sum_dy_xhat = 0.0;
  for_each_in_run(l, [&](int64_t o) {
    const double xhat = (load(x, o) - m) * inv;
    const float g = grad_at<Relu>(dy, y, o);
    if (Store == Shortcut::write) store(dshortcut, o, g);
    if (Store == Shortcut::add) store(dshortcut, o, load(dshortcut, o) + g);
    sum_dy += g;
    sum_dy_xhat += g * xhat;
  });
  write_run_sum(l, sum_dy, partial_dy);
  write_run_sum(l, sum_dy_xhat, partial_dy_xhat);
}

__global__ void finish_gradient_sums(Layout l, const double* partial_dy, const double* partial_dy_xhat,
                                     float* dgamma, float* dbeta, float* mean_dy, float* mean_dy_xhat) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= l.channels) return;
  const double sum_dy = channel_total(partial_dy, c, l.splits);
  const double sum_dy_xhat = channel_total(partial_dy_xhat, c, l.splits);
  dbeta[c] = static_cast<float>(sum_dy);
  dgamma[c] = static_cast<float>(sum_dy_xhat);
  const double count = static_cast<double>(l.n * l.spatial);
  mean_dy[c] = count > 0 ? static_cast<float>(sum_dy / count) : 0.0f;
  mean_dy_xhat[c] = count > 0 ? static_cast<float>(sum_dy_xhat / count) : 0.0f;
}

__global__ void finish_gradient_sums_double(Layout l, const double* partial_dy, const double* partial_dy_xhat,
                                            double* sum_dy, double* sum_dy_xhat) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= l.channels) return;
  sum_dy[c] = channel_total(partial_dy, c, l.splits);
  sum_dy_xhat[c] = channel_total(partial_dy_xhat, c, l.splits);
}

template <bool Accumulate, bool Relu, typename T>
__global__ void __launch_bounds__(kThreads)
    input_gradient(const T* x, const T* dy, const T* y, T* dx, Layout l, const float* mean, const float* inv_std,
                   const float* gamma, const float* mean_dy, const float* mean_dy_xhat) {
  for_each_value(l, [&](uint32_t c, int64_t i) {
    const float xhat = (load(x, i) - mean[c]) * inv_std[c];
    float g = Accumulate ? load(dx, i) : 0.0f;
    store_grad(g, bn_input_grad(grad_at<Relu>(dy, y, i), xhat, gamma[c], inv_std[c], mean_dy[c], mean_dy_xhat[c]),
               Accumulate);
    store(dx, i, g);
  });
}

__global__ void update_running(float* running_mean, float* running_var, const float* mean, const float* biased_var,
                               int64_t channels, int64_t values_per_channel, float momentum) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  running_mean[c] = bn_running_update(running_mean[c], mean[c], momentum);
  running_var[c] = bn_running_update(running_var[c], bn_unbiased_var(biased_var[c], values_per_channel), momentum);
}

// Scratch: two double arrays of channels * splits, then two float arrays of channels.
struct Scratch {
  double* first;
  double* second;
  float* floats_a;
  float* floats_b;
};
Scratch carve(void* scratch, const Layout& l) {
  auto* d = static_cast<double*>(scratch);
  const int64_t partials = l.channels * l.splits;
  auto* f = reinterpret_cast<float*>(d + 2 * partials);
  return {d, d + partials, f, f + l.channels};
}

template <bool Relu, typename T>
void launch_normalize(cudaStream_t stream, const T* x, const T* shortcut, int64_t n, int64_t channels,
                      int64_t spatial, const float* mean, const float* inv_std, const float* gamma, const float* beta,
                      T* y, MemoryFormat format) {
  if (n * channels * spatial <= 0) return;
  Layout l = layout_for(n, channels, spatial, format);
  LS_LAUNCH(value_blocks(l), kThreads, 0, stream, normalize<Relu, T>)(x, shortcut, y, l, mean, inv_std, gamma, beta);
  LS_CUDA_CHECK_LAUNCH("normalize");
}

template <bool Relu, typename T>
void launch_input_gradient(cudaStream_t stream, const Layout& l, const T* x, const T* dy, const T* y,
                           const float* mean, const float* inv_std, const float* gamma, const float* mean_dy,
                           const float* mean_dy_xhat, T* dx, bool accumulate) {
  if (accumulate)
    LS_LAUNCH(value_blocks(l), kThreads, 0, stream, input_gradient<true, Relu, T>)(x, dy, y, dx, l, mean, inv_std, gamma,
                                                                           mean_dy, mean_dy_xhat);
  else
    LS_LAUNCH(value_blocks(l), kThreads, 0, stream, input_gradient<false, Relu, T>)(x, dy, y, dx, l, mean, inv_std,
                                                                            gamma, mean_dy, mean_dy_xhat);
  LS_CUDA_CHECK_LAUNCH("input_gradient");
}

// y is read only with Relu (the fused ReLU's output); dshortcut (with Relu
// only) receives the masked gradient per `store`, and once written it is
// what the input-gradient pass reads instead of y and dy.
template <bool Relu, typename T>
void launch_backward(cudaStream_t stream, const T* x, const T* y, const T* dy, int64_t n, int64_t channels,
                     int64_t spatial, const float* saved_mean, const float* saved_inv_std, const float* gamma,
                     float* dgamma, float* dbeta, T* dx, bool accumulate, void* scratch, MemoryFormat format,
                     Shortcut store = Shortcut::none, T* dshortcut = nullptr) {
  if (channels <= 0) return;
  Layout l = layout_for(n, channels, spatial, format);
  Scratch s = carve(scratch, l);
  if (store == Shortcut::write)
    LS_LAUNCH(run_blocks(l), kThreads, 0, stream, run_gradient_sums<Relu, Shortcut::write, T>)(
        x, dy, y, l, saved_mean, saved_inv_std, s.first, s.second, dshortcut);
  else if (store == Shortcut::add)
    LS_LAUNCH(run_blocks(l), kThreads, 0, stream, run_gradient_sums<Relu, Shortcut::add, T>)(
        x, dy, y, l, saved_mean, saved_inv_std, s.first, s.second, dshortcut);
  else
    LS_LAUNCH(run_blocks(l), kThreads, 0, stream, run_gradient_sums<Relu, Shortcut::none, T>)(
        x, dy, y, l, saved_mean, saved_inv_std, s.first, s.second, nullptr);
  LS_CUDA_CHECK_LAUNCH("run_gradient_sums");
  LS_LAUNCH(channel_blocks(channels), kThreads, 0, stream, finish_gradient_sums)(l, s.first, s.second, dgamma, dbeta,
                                                                          s.floats_a, s.floats_b);
  LS_CUDA_CHECK_LAUNCH("finish_gradient_sums");
  if (!dx || n * spatial == 0) return;
  if (store == Shortcut::write)
    launch_input_gradient<false, T>(stream, l, x, dshortcut, nullptr, saved_mean, saved_inv_std, gamma, s.floats_a,
                                 s.floats_b, dx, accumulate);
  else
    launch_input_gradient<Relu, T>(stream, l, x, dy, y, saved_mean, saved_inv_std, gamma, s.floats_a, s.floats_b, dx,
                                accumulate);
}

}  // namespace

size_t batchnorm_scratch_bytes(int64_t n, int64_t channels, int64_t spatial) {
  size_t bytes = sizeof(double) * 2 * static_cast<size_t>(partials_for(n, channels, spatial)) +
                 sizeof(float) * 2 * channels;
  return (bytes + 15) / 16 * 16;
}

template <typename T>
void batchnorm_statistics(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial, float eps,
                          float* batch_mean, float* batch_var, float* saved_mean, float* saved_inv_std, void* scratch,
                          MemoryFormat format) {
  if (channels <= 0) return;
  Layout l = layout_for(n, channels, spatial, format);
  Scratch s = carve(scratch, l);
  LS_LAUNCH(run_blocks(l), kThreads, 0, stream, run_shifted_moments<T>)(x, l, s.first, s.second);
  LS_CUDA_CHECK_LAUNCH("run_shifted_moments");
  LS_LAUNCH(channel_blocks(channels), kThreads, 0, stream, finish_statistics<T>)(x, l, s.first, s.second, eps,
                                                                                batch_mean, batch_var, saved_mean,
                                                                                saved_inv_std);
  LS_CUDA_CHECK_LAUNCH("finish_statistics");
}

template <typename T>
void batchnorm_normalize(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial,
                         const float* mean, const float* inv_std, const float* gamma, const float* beta, T* y,
                         MemoryFormat format) {
  launch_normalize<false, T>(stream, x, nullptr, n, channels, spatial, mean, inv_std, gamma, beta, y, format);
}

template <typename T>
void batchnorm_relu_normalize(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial,
                              const float* mean, const float* inv_std, const float* gamma, const float* beta, T* y,
                              MemoryFormat format) {
  launch_normalize<true, T>(stream, x, nullptr, n, channels, spatial, mean, inv_std, gamma, beta, y, format);
}

template <typename T>
void batchnorm_forward_train(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial, float eps,
                             const float* gamma, const float* beta, T* y, float* batch_mean, float* batch_var,
                             float* saved_mean, float* saved_inv_std, void* scratch, MemoryFormat format) {
  batchnorm_statistics(stream, x, n, channels, spatial, eps, batch_mean, batch_var, saved_mean, saved_inv_std,
                       scratch, format);
  batchnorm_normalize(stream, x, n, channels, spatial, saved_mean, saved_inv_std, gamma, beta, y, format);
}

template <typename T>
void batchnorm_forward_eval(cudaStream_t stream, const T* x, int64_t n, int64_t channels, int64_t spatial,
                            const float* running_mean, const float* running_var, float eps, const float* gamma,
                            const float* beta, T* y, MemoryFormat format) {
  if (n * channels * spatial <= 0) return;
  Layout l = layout_for(n, channels, spatial, format);
  LS_LAUNCH(value_blocks(l), kThreads, 0, stream, normalize_eval<T>)(x, y, l, running_mean, running_var, eps, gamma,
                                                                    beta);
  LS_CUDA_CHECK_LAUNCH("normalize_eval");
}

template <typename T>
void batchnorm_backward(cudaStream_t stream, const T* x, const T* dy, int64_t n, int64_t channels, int64_t spatial,
                        const float* saved_mean, const float* saved_inv_std, const float* gamma, float* dgamma,
                        float* dbeta, T* dx, bool accumulate, void* scratch, MemoryFormat format) {
  launch_backward<false, T>(stream, x, nullptr, dy, n, channels, spatial, saved_mean, saved_inv_std, gamma, dgamma,
                            dbeta, dx, accumulate, scratch, format);
}

template <typename T>
void batchnorm_relu_backward(cudaStream_t stream, const T* x, const T* y, const T* dy, int64_t n, int64_t channels,
                             int64_t spatial, const float* saved_mean, const float* saved_inv_std, const float* gamma,
                             float* dgamma, float* dbeta, T* dx, bool accumulate, void* scratch,
                             MemoryFormat format) {
  launch_backward<true, T>(stream, x, y, dy, n, channels, spatial, saved_mean, saved_inv_std, gamma, dgamma, dbeta,
                           dx, accumulate, scratch, format);
}

template <typename T>
void batchnorm_add_relu_normalize(cudaStream_t stream, const T* x, const T* shortcut, int64_t n, int64_t channels,
                                  int64_t spatial, const float* mean, const float* inv_std, const float* gamma,
                                  const float* beta, T* y, MemoryFormat format) {
  launch_normalize<true, T>(stream, x, shortcut, n, channels, spatial, mean, inv_std, gamma, beta, y, format);
}

template <typename T>
void batchnorm_add_relu_backward(cudaStream_t stream, const T* x, const T* y, const T* dy, int64_t n,
                                 int64_t channels, int64_t spatial, const float* saved_mean,
                                 const float* saved_inv_std, const float* gamma, float* dgamma, float* dbeta, T* dx,
                                 bool accumulate, T* dshortcut, bool accumulate_shortcut, void* scratch,
                                 MemoryFormat format) {
  const Shortcut store = !dshortcut ? Shortcut::none : accumulate_shortcut ? Shortcut::add : Shortcut::write;
  launch_backward<true, T>(stream, x, y, dy, n, channels, spatial, saved_mean, saved_inv_std, gamma, dgamma, dbeta,
                           dx, accumulate, scratch, format, store, dshortcut);
}

template <typename T>
void batchnorm_gradient_sums(cudaStream_t stream, const T* x, const T* dy, int64_t n, int64_t channels,
                             int64_t spatial, const float* mean, const float* inv_std, double* sum_dy,
                             double* sum_dy_xhat, void* scratch, MemoryFormat format) {
  if (channels <= 0) return;
  Layout l = layout_for(n, channels, spatial, format);
  Scratch s = carve(scratch, l);
  LS_LAUNCH(run_blocks(l), kThreads, 0, stream, run_gradient_sums<false, Shortcut::none, T>)(
      x, dy, nullptr, l, mean, inv_std, s.first, s.second, nullptr);
  LS_CUDA_CHECK_LAUNCH("run_gradient_sums");
  LS_LAUNCH(channel_blocks(channels), kThreads, 0, stream, finish_gradient_sums_double)(l, s.first, s.second, sum_dy,
                                                                                       sum_dy_xhat);
  LS_CUDA_CHECK_LAUNCH("finish_gradient_sums_double");
}

template <typename T>
void batchnorm_input_gradient(cudaStream_t stream, const T* x, const T* dy, int64_t n, int64_t channels,
                              int64_t spatial, const float* mean, const float* inv_std, const float* gamma,
                              const float* mean_dy, const float* mean_dy_xhat, T* dx, bool accumulate,
                              MemoryFormat format) {
  if (n * channels * spatial <= 0) return;
  launch_input_gradient<false, T>(stream, layout_for(n, channels, spatial, format), x, dy, nullptr, mean, inv_std,
                                  gamma, mean_dy, mean_dy_xhat, dx, accumulate);
}

void batchnorm_update_running(cudaStream_t stream, float* running_mean, float* running_var, const float* mean,
                              const float* biased_var, int64_t channels, int64_t values_per_channel, float momentum) {
  if (channels <= 0) return;
  LS_LAUNCH(channel_blocks(channels), kThreads, 0, stream, update_running)(running_mean, running_var, mean, biased_var,
                                                                    channels, values_per_channel, momentum);
  LS_CUDA_CHECK_LAUNCH("update_running");
}

#define LS_INSTANTIATE(T)                                                                                        \
  template void batchnorm_statistics<T>(cudaStream_t, const T*, int64_t, int64_t, int64_t, float, float*, float*, \
                                        float*, float*, void*, MemoryFormat);                                   \
  template void batchnorm_normalize<T>(cudaStream_t, const T*, int64_t, int64_t, int64_t, const float*,          \
                                       const float*, const float*, const float*, T*, MemoryFormat);             \
  template void batchnorm_relu_normalize<T>(cudaStream_t, const T*, int64_t, int64_t, int64_t, const float*,     \
                                            const float*, const float*, const float*, T*, MemoryFormat);        \
  template void batchnorm_forward_train<T>(cudaStream_t, const T*, int64_t, int64_t, int64_t, float,             \
                                           const float*, const float*, T*, float*, float*, float*, float*, void*, \
                                           MemoryFormat);                                                        \
  template void batchnorm_forward_eval<T>(cudaStream_t, const T*, int64_t, int64_t, int64_t, const float*,       \
                                          const float*, float, const float*, const float*, T*, MemoryFormat);   \
  template void batchnorm_backward<T>(cudaStream_t, const T*, const T*, int64_t, int64_t, int64_t, const float*, \
                                      const float*, const float*, float*, float*, T*, bool, void*, MemoryFormat); \
  template void batchnorm_relu_backward<T>(cudaStream_t, const T*, const T*, const T*, int64_t, int64_t, int64_t, \
                                           const float*, const float*, const float*, float*, float*, T*, bool,    \
                                           void*, MemoryFormat);                                                  \
  template void batchnorm_add_relu_normalize<T>(cudaStream_t, const T*, const T*, int64_t, int64_t, int64_t,     \
                                                const float*, const float*, const float*, const float*, T*,      \
                                                MemoryFormat);                                                    \
  template void batchnorm_add_relu_backward<T>(cudaStream_t, const T*, const T*, const T*, int64_t, int64_t,     \
                                               int64_t, const float*, const float*, const float*, float*, float*, \
                                               T*, bool, T*, bool, void*, MemoryFormat);                          \
  template void batchnorm_gradient_sums<T>(cudaStream_t, const T*, const T*, int64_t, int64_t, int64_t,          \
                                           const float*, const float*, double*, double*, void*, MemoryFormat);  \
  template void batchnorm_input_gradient<T>(cudaStream_t, const T*, const T*, int64_t, int64_t, int64_t,         \
                                            const float*, const float*, const float*, const float*, const float*, \
                                            T*, bool, MemoryFormat);
LS_INSTANTIATE(float)
LS_INSTANTIATE(bf16_bits)
#undef LS_INSTANTIATE

}  // namespace lockstep::cuda
