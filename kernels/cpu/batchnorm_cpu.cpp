#include "kernels/cpu/batchnorm_cpu.h"

#include <algorithm>
#include <array>
#include <vector>

#include "kernels/bn_math.h"
#include "kernels/cpu/lane_sums.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/elementwise_math.h"

namespace lockstep::cpu {

namespace {

// A plane's sum, of its values or of their squared distances from `m`, in
// double over 8 independent lanes: the compiler vectorises the lanes, where
// one accumulator is a chain of dependent additions (the statistics were 7%
// of a resnet20 step that way). In double the order of the additions moves
// the float mean and variance only in a tie far below float's precision.
template <bool Squares>
double plane_sum(const float* plane, int64_t spatial, double m) {
  constexpr int lanes = 8;
  double acc[lanes] = {};
  int64_t j = 0;
  for (; j + lanes <= spatial; j += lanes)
    for (int l = 0; l < lanes; ++l) {
      const double v = plane[j + l];
      acc[l] += Squares ? (v - m) * (v - m) : v;
    }
  for (; j < spatial; ++j) {
    const double v = plane[j];
    acc[0] += Squares ? (v - m) * (v - m) : v;
  }
  double total = 0.0;
  for (int l = 0; l < lanes; ++l) total += acc[l];
  return total;
}

// Calls f(j, l) for each pixel j of a plane of `spatial` pixels, l being the
// lane its sum goes to: j % Lanes over the whole groups of Lanes, lane 0 for
// the rest (plane_sum's and add_lane_sums' order, which the channels-last
// sums repeat to give NCHW's bits).
template <int Lanes, class F>
void for_each_lane(int64_t spatial, F f) {
  int64_t j = 0;
  for (; j + Lanes <= spatial; j += Lanes)
    for (int l = 0; l < Lanes; ++l) f(j + l, l);
  for (; j < spatial; ++j) f(j, 0);
}

// Channels-last twins of the per-channel sums, in the NCHW loops' order of
// additions so both formats give the same bits: each sample's sums of every
// channel side by side (the lanes run along the pixels, as a plane's do),
// samples in parallel, then joined over the samples in order.

// out[c] = plane_sum<Squares> of channel c of one [spatial, channels] sample.
template <bool Squares>
void sample_channel_sums(const float* sample, int64_t spatial, int64_t channels, const double* m, double* out) {
  constexpr int lanes = 8;  // plane_sum's
  std::vector<double> acc(lanes * channels, 0.0);
  for_each_lane<lanes>(spatial, [&](int64_t j, int l) {
    const float* row = sample + j * channels;
    double* a = acc.data() + l * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double v = row[c];
      a[c] += Squares ? (v - m[c]) * (v - m[c]) : v;
    }
  });
  for (int64_t c = 0; c < channels; ++c) {
    double total = 0.0;
    for (int l = 0; l < lanes; ++l) total += acc[l * channels + c];
    out[c] = total;
  }
}

// The statistics of a channel from each sample's: sum[i] of its `spatial`
// values (at stride `stride` in `sum` and `squares`) and squares[i], their
// squared distances from that sample's own mean. Joined over the samples in
// order (Chan et al.'s pairwise update: sum (squares_i + spatial (m_i - m)^2)),
// so each sample's values are read twice while they are in cache and the
// whole tensor once from memory, where the variance around the batch mean
// needs the mean before a second pass over all of it. Every term is
// non-negative: nothing cancels, and in double the float mean and variance
// are those of the two passes but in a tie far below float's precision.
void channel_stats(const double* sum, const double* squares, int64_t stride, int64_t n, int64_t spatial, float eps,
                   float* mean, float* var, float* inv_std) {
  const int64_t count = n * spatial;
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += sum[i * stride];
  const double m = count > 0 ? total / static_cast<double>(count) : 0.0;
  double spread = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double off = sum[i * stride] / static_cast<double>(spatial) - m;
    spread += squares[i * stride] + static_cast<double>(spatial) * off * off;
  }
  *mean = static_cast<float>(m);
  *var = count > 0 ? static_cast<float>(spread / static_cast<double>(count)) : 0.0f;
  *inv_std = bn_inv_std(*var, eps);
}

void nhwc_batch_stats(const float* x, int64_t n, int64_t channels, int64_t spatial, float eps, float* mean,
                      float* var, float* inv_std) {
  // [sample][channel]: each sample's sums, then its squares about its means.
  std::vector<double> sums(n * channels), squares(n * channels);
  parallel_items(n, 2 * channels * spatial, [&](int64_t i) {
    const float* sample = x + i * spatial * channels;
    double* s = sums.data() + i * channels;
    std::vector<double> m(channels, 0.0);
    sample_channel_sums<false>(sample, spatial, channels, m.data(), s);
    for (int64_t c = 0; c < channels; ++c) m[c] = s[c] / static_cast<double>(spatial);
    sample_channel_sums<true>(sample, spatial, channels, m.data(), squares.data() + i * channels);
  });
  for (int64_t c = 0; c < channels; ++c)
    channel_stats(sums.data() + c, squares.data() + c, channels, n, spatial, eps, mean + c, var + c, inv_std + c);
}

// Calls f(p, c) for every position p of an [n, channels, spatial] image
// tensor laid out in `format`, c being its channel: planes or rows in parallel.
template <class F>
void for_each_value(int64_t n, int64_t channels, int64_t spatial, MemoryFormat format, F f) {
  if (format == MemoryFormat::nhwc) {
    parallel_items(n * spatial, channels, [&](int64_t row) {
      const int64_t base = row * channels;
      for (int64_t c = 0; c < channels; ++c) f(base + c, c);
    });
  } else {
    parallel_items(n * channels, spatial, [&](int64_t plane) {
      const int64_t c = plane % channels, base = plane * spatial;
      for (int64_t j = 0; j < spatial; ++j) f(base + j, c);
    });
  }
}

}  // namespace

void batchnorm_batch_stats(const float* x, int64_t n, int64_t channels, int64_t spatial, float eps, float* mean,
                           float* var, float* inv_std, MemoryFormat format) {
  if (format == MemoryFormat::nhwc) {
    nhwc_batch_stats(x, n, channels, spatial, eps, mean, var, inv_std);
    return;
  }
  parallel_items(channels, 2 * n * spatial, [&](int64_t c) {
    std::vector<double> sums(n), squares(n);
    for (int64_t i = 0; i < n; ++i) {
      const float* plane = x + (i * channels + c) * spatial;
      sums[i] = plane_sum<false>(plane, spatial, 0.0);
      squares[i] = plane_sum<true>(plane, spatial, sums[i] / static_cast<double>(spatial));
    }
    channel_stats(sums.data(), squares.data(), 1, n, spatial, eps, mean + c, var + c, inv_std + c);
  });
}

namespace {

// What the plain and the fused passes share: `Relu` clamps the output, a
// non-null `shortcut` is added before the clamp (the residual join), and the
// backward passes read dy through `grad(i)`, the stored dy or the ReLU's
// gradient of it.
template <bool Relu>
void normalize_pass(const float* x, const float* shortcut, int64_t n, int64_t channels, int64_t spatial,
                    const float* mean, const float* inv_std, const float* gamma, const float* beta, float* y,
                    MemoryFormat format) {
  for_each_value(n, channels, spatial, format, [&](int64_t p, int64_t c) {
    float v = bn_normalize(x[p], mean[c], inv_std[c], gamma[c], beta[c]);
    if (shortcut) v += shortcut[p];
    y[p] = Relu ? relu_forward(v) : v;
  });
}

// The channels-last twin of gradient_sums_pass, in its order of additions:
// each sample's float lanes of every channel (add_lane_sums' 16, along the
// pixels), samples in parallel, then joined into the doubles sample by
// sample and lane by lane as add_lane_sums joins them.
template <class Grad>
void nhwc_gradient_sums(const float* x, Grad grad, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                        const float* inv_std, double* sum_dy, double* sum_dy_xhat) {
  constexpr int lanes = 16;  // add_lane_sums'
  const int64_t per_sample = 2 * lanes * channels;  // [term][lane][channel]
  std::vector<float> acc(n * per_sample, 0.0f);
  parallel_items(n, 2 * channels * spatial, [&](int64_t i) {
    float* a = acc.data() + i * per_sample;
    for_each_lane<lanes>(spatial, [&](int64_t j, int l) {
      const int64_t row = (i * spatial + j) * channels;
      float *dy_lane = a + l * channels, *dy_xhat_lane = a + (lanes + l) * channels;
      for (int64_t c = 0; c < channels; ++c) {
        const float g = grad(row + c);
        dy_lane[c] += g;
        dy_xhat_lane[c] += g * ((x[row + c] - mean[c]) * inv_std[c]);
      }
    });
  });
  std::fill(sum_dy, sum_dy + channels, 0.0);
  std::fill(sum_dy_xhat, sum_dy_xhat + channels, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int l = 0; l < lanes; ++l)
      for (int64_t c = 0; c < channels; ++c) {
        sum_dy[c] += acc[i * per_sample + l * channels + c];
        sum_dy_xhat[c] += acc[i * per_sample + (lanes + l) * channels + c];
      }
}

template <class Grad>
void gradient_sums_pass(const float* x, Grad grad, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                        const float* inv_std, double* sum_dy, double* sum_dy_xhat, MemoryFormat format) {
  if (format == MemoryFormat::nhwc) {
    nhwc_gradient_sums(x, grad, n, channels, spatial, mean, inv_std, sum_dy, sum_dy_xhat);
    return;
  }
  parallel_items(channels, 2 * n * spatial, [&](int64_t c) {
    double sums[2] = {0.0, 0.0};  // of dy and dy * xhat
    for (int64_t i = 0; i < n; ++i) {
      const int64_t base = (i * channels + c) * spatial;
      add_lane_sums<2>(spatial, [&](int64_t j) {
        const float g = grad(base + j);
        return std::array<float, 2>{g, g * ((x[base + j] - mean[c]) * inv_std[c])};
      }, sums);
    }
    sum_dy[c] = sums[0];
    sum_dy_xhat[c] = sums[1];
  });
}

template <class Grad>
void input_gradient_pass(const float* x, Grad grad, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                         const float* inv_std, const float* gamma, const float* mean_dy, const float* mean_dy_xhat,
                         float* dx, bool accumulate, MemoryFormat format) {
  for_each_value(n, channels, spatial, format, [&](int64_t p, int64_t c) {
    const float xhat = (x[p] - mean[c]) * inv_std[c];
    store_grad(dx[p], bn_input_grad(grad(p), xhat, gamma[c], inv_std[c], mean_dy[c], mean_dy_xhat[c]), accumulate);
  });
}

// The sums pass reads the gradient through `sums_grad`, the input-gradient
// pass through `input_grad`: the same values, possibly from another buffer.
template <class SumsGrad, class InputGrad>
void backward_pass(const float* x, SumsGrad sums_grad, InputGrad input_grad, int64_t n, int64_t channels,
                   int64_t spatial, const float* mean, const float* inv_std, const float* gamma, float* dgamma,
                   float* dbeta, float* dx, bool accumulate, MemoryFormat format) {
  const int64_t count = n * spatial;
  std::vector<double> sum_dy(channels), sum_dy_xhat(channels);
  gradient_sums_pass(x, sums_grad, n, channels, spatial, mean, inv_std, sum_dy.data(), sum_dy_xhat.data(), format);
  std::vector<float> mean_dy(channels), mean_dy_xhat(channels);
  for (int64_t c = 0; c < channels; ++c) {
    dbeta[c] = static_cast<float>(sum_dy[c]);
    dgamma[c] = static_cast<float>(sum_dy_xhat[c]);
    if (count == 0) continue;
    mean_dy[c] = static_cast<float>(sum_dy[c] / static_cast<double>(count));
    mean_dy_xhat[c] = static_cast<float>(sum_dy_xhat[c] / static_cast<double>(count));
  }
  if (!dx || count == 0) return;
  input_gradient_pass(x, input_grad, n, channels, spatial, mean, inv_std, gamma, mean_dy.data(), mean_dy_xhat.data(),
                      dx, accumulate, format);
}

template <class Grad>
void backward_pass(const float* x, Grad grad, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                   const float* inv_std, const float* gamma, float* dgamma, float* dbeta, float* dx, bool accumulate,
                   MemoryFormat format) {
  backward_pass(x, grad, grad, n, channels, spatial, mean, inv_std, gamma, dgamma, dbeta, dx, accumulate, format);
}

}  // namespace

void batchnorm_normalize(const float* x, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                         const float* inv_std, const float* gamma, const float* beta, float* y, MemoryFormat format) {
  normalize_pass<false>(x, nullptr, n, channels, spatial, mean, inv_std, gamma, beta, y, format);
}

void batchnorm_relu_normalize(const float* x, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                              const float* inv_std, const float* gamma, const float* beta, float* y,
                              MemoryFormat format) {
  normalize_pass<true>(x, nullptr, n, channels, spatial, mean, inv_std, gamma, beta, y, format);
}

void batchnorm_forward_eval(const float* x, int64_t n, int64_t channels, int64_t spatial, const float* running_mean,
                            const float* running_var, float eps, const float* gamma, const float* beta, float* y,
                            MemoryFormat format) {
  std::vector<float> inv_std(channels);
  for (int64_t c = 0; c < channels; ++c) inv_std[c] = bn_inv_std(running_var[c], eps);
  for_each_value(n, channels, spatial, format, [&](int64_t p, int64_t c) {
    y[p] = bn_normalize(x[p], running_mean[c], inv_std[c], gamma[c], beta[c]);
  });
}

void batchnorm_gradient_sums(const float* x, const float* dy, int64_t n, int64_t channels, int64_t spatial,
                             const float* mean, const float* inv_std, double* sum_dy, double* sum_dy_xhat,
                             MemoryFormat format) {
  gradient_sums_pass(x, [dy](int64_t i) { return dy[i]; }, n, channels, spatial, mean, inv_std, sum_dy, sum_dy_xhat,
                     format);
}

void batchnorm_input_gradient(const float* x, const float* dy, int64_t n, int64_t channels, int64_t spatial,
                              const float* mean, const float* inv_std, const float* gamma, const float* mean_dy,
                              const float* mean_dy_xhat, float* dx, bool accumulate, MemoryFormat format) {
  input_gradient_pass(x, [dy](int64_t i) { return dy[i]; }, n, channels, spatial, mean, inv_std, gamma, mean_dy,
                      mean_dy_xhat, dx, accumulate, format);
}

void batchnorm_backward(const float* x, const float* dy, int64_t n, int64_t channels, int64_t spatial,
                        const float* mean, const float* inv_std, const float* gamma, float* dgamma, float* dbeta,
                        float* dx, bool accumulate, MemoryFormat format) {
  backward_pass(x, [dy](int64_t i) { return dy[i]; }, n, channels, spatial, mean, inv_std, gamma, dgamma, dbeta, dx,
                accumulate, format);
}

void batchnorm_relu_backward(const float* x, const float* y, const float* dy, int64_t n, int64_t channels,
                             int64_t spatial, const float* mean, const float* inv_std, const float* gamma,
                             float* dgamma, float* dbeta, float* dx, bool accumulate, MemoryFormat format) {
  backward_pass(x, [y, dy](int64_t i) { return relu_backward(y[i], dy[i]); }, n, channels, spatial, mean, inv_std,
                gamma, dgamma, dbeta, dx, accumulate, format);
}

void batchnorm_add_relu_normalize(const float* x, const float* shortcut, int64_t n, int64_t channels, int64_t spatial,
                                  const float* mean, const float* inv_std, const float* gamma, const float* beta,
                                  float* y, MemoryFormat format) {
  normalize_pass<true>(x, shortcut, n, channels, spatial, mean, inv_std, gamma, beta, y, format);
}

void batchnorm_add_relu_backward(const float* x, const float* y, const float* dy, int64_t n, int64_t channels,
                                 int64_t spatial, const float* mean, const float* inv_std, const float* gamma,
                                 float* dgamma, float* dbeta, float* dx, bool accumulate, float* dshortcut,
                                 bool accumulate_shortcut, MemoryFormat format) {
  const auto masked = [y, dy](int64_t i) { return relu_backward(y[i], dy[i]); };
  if (!dshortcut) {
    backward_pass(x, masked, n, channels, spatial, mean, inv_std, gamma, dgamma, dbeta, dx, accumulate, format);
    return;
  }
  // The shortcut's gradient is the masked dy itself: stored as the sums pass
  // forms it, and when written (not added) it is what the input-gradient
  // pass reads back, one tensor where the mask needs two.
  const auto stored = [&](int64_t i) {
    const float g = masked(i);
    store_grad(dshortcut[i], g, accumulate_shortcut);
    return g;
  };
  if (accumulate_shortcut)
    backward_pass(x, stored, masked, n, channels, spatial, mean, inv_std, gamma, dgamma, dbeta, dx, accumulate,
                  format);
  else
    backward_pass(x, stored, [dshortcut](int64_t i) { return dshortcut[i]; }, n, channels, spatial, mean, inv_std,
                  gamma, dgamma, dbeta, dx, accumulate, format);
}

void batchnorm_update_running(float* running_mean, float* running_var, const float* mean, const float* biased_var,
                              int64_t channels, int64_t values_per_channel, float momentum) {
  for (int64_t c = 0; c < channels; ++c) {
    running_mean[c] = bn_running_update(running_mean[c], mean[c], momentum);
    running_var[c] = bn_running_update(running_var[c], bn_unbiased_var(biased_var[c], values_per_channel), momentum);
  }
}

}  // namespace lockstep::cpu
