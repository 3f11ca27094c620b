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

}  // namespace

void batchnorm_batch_stats(const float* x, int64_t n, int64_t channels, int64_t spatial, float eps, float* mean,
                           float* var, float* inv_std) {
  const int64_t count = n * spatial;
  parallel_items(channels, 2 * count, [&](int64_t c) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += plane_sum<false>(x + (i * channels + c) * spatial, spatial, 0.0);
    const double m = count > 0 ? sum / static_cast<double>(count) : 0.0;
    double squares = 0.0;
    for (int64_t i = 0; i < n; ++i) squares += plane_sum<true>(x + (i * channels + c) * spatial, spatial, m);
    mean[c] = static_cast<float>(m);
    var[c] = count > 0 ? static_cast<float>(squares / static_cast<double>(count)) : 0.0f;
    inv_std[c] = bn_inv_std(var[c], eps);
  });
}

namespace {

// What the plain and the fused passes share: `Relu` clamps the output, a
// non-null `shortcut` is added before the clamp (the residual join), and the
// backward passes read dy through `grad(i)`, the stored dy or the ReLU's
// gradient of it.
template <bool Relu>
void normalize_pass(const float* x, const float* shortcut, int64_t n, int64_t channels, int64_t spatial,
                    const float* mean, const float* inv_std, const float* gamma, const float* beta, float* y) {
  // One item per (sample, channel) plane.
  parallel_items(n * channels, spatial, [&](int64_t plane) {
    const int64_t c = plane % channels, base = plane * spatial;
    for (int64_t j = 0; j < spatial; ++j) {
      float v = bn_normalize(x[base + j], mean[c], inv_std[c], gamma[c], beta[c]);
      if (shortcut) v += shortcut[base + j];
      y[base + j] = Relu ? relu_forward(v) : v;
    }
  });
}

template <class Grad>
void gradient_sums_pass(const float* x, Grad grad, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                        const float* inv_std, double* sum_dy, double* sum_dy_xhat) {
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
                         float* dx, bool accumulate) {
  // One item per (sample, channel) plane.
  parallel_items(n * channels, spatial, [&](int64_t plane) {
    const int64_t c = plane % channels, base = plane * spatial;
    for (int64_t j = 0; j < spatial; ++j) {
      const float xhat = (x[base + j] - mean[c]) * inv_std[c];
      store_grad(dx[base + j], bn_input_grad(grad(base + j), xhat, gamma[c], inv_std[c], mean_dy[c], mean_dy_xhat[c]),
                 accumulate);
    }
  });
}

// The sums pass reads the gradient through `sums_grad`, the input-gradient
// pass through `input_grad`: the same values, possibly from another buffer.
template <class SumsGrad, class InputGrad>
void backward_pass(const float* x, SumsGrad sums_grad, InputGrad input_grad, int64_t n, int64_t channels,
                   int64_t spatial, const float* mean, const float* inv_std, const float* gamma, float* dgamma,
                   float* dbeta, float* dx, bool accumulate) {
  const int64_t count = n * spatial;
  std::vector<double> sum_dy(channels), sum_dy_xhat(channels);
  gradient_sums_pass(x, sums_grad, n, channels, spatial, mean, inv_std, sum_dy.data(), sum_dy_xhat.data());
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
                      dx, accumulate);
}

template <class Grad>
void backward_pass(const float* x, Grad grad, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                   const float* inv_std, const float* gamma, float* dgamma, float* dbeta, float* dx, bool accumulate) {
  backward_pass(x, grad, grad, n, channels, spatial, mean, inv_std, gamma, dgamma, dbeta, dx, accumulate);
}

}  // namespace

void batchnorm_normalize(const float* x, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                         const float* inv_std, const float* gamma, const float* beta, float* y) {
  normalize_pass<false>(x, nullptr, n, channels, spatial, mean, inv_std, gamma, beta, y);
}

void batchnorm_relu_normalize(const float* x, int64_t n, int64_t channels, int64_t spatial, const float* mean,
                              const float* inv_std, const float* gamma, const float* beta, float* y) {
  normalize_pass<true>(x, nullptr, n, channels, spatial, mean, inv_std, gamma, beta, y);
}

void batchnorm_forward_eval(const float* x, int64_t n, int64_t channels, int64_t spatial, const float* running_mean,
                            const float* running_var, float eps, const float* gamma, const float* beta, float* y) {
  parallel_items(channels, n * spatial, [&](int64_t c) {
    const float inv_std = bn_inv_std(running_var[c], eps);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t base = (i * channels + c) * spatial;
      for (int64_t j = 0; j < spatial; ++j)
        y[base + j] = bn_normalize(x[base + j], running_mean[c], inv_std, gamma[c], beta[c]);
    }
  });
}

void batchnorm_gradient_sums(const float* x, const float* dy, int64_t n, int64_t channels, int64_t spatial,
                             const float* mean, const float* inv_std, double* sum_dy, double* sum_dy_xhat) {
  gradient_sums_pass(x, [dy](int64_t i) { return dy[i]; }, n, channels, spatial, mean, inv_std, sum_dy, sum_dy_xhat);
}

void batchnorm_input_gradient(const float* x, const float* dy, int64_t n, int64_t channels, int64_t spatial,
                              const float* mean, const float* inv_std, const float* gamma, const float* mean_dy,
                              const float* mean_dy_xhat, float* dx, bool accumulate) {
  input_gradient_pass(x, [dy](int64_t i) { return dy[i]; }, n, channels, spatial, mean, inv_std, gamma, mean_dy,
                      mean_dy_xhat, dx, accumulate);
}

void batchnorm_backward(const float* x, const float* dy, int64_t n, int64_t channels, int64_t spatial,
                        const float* mean, const float* inv_std, const float* gamma, float* dgamma, float* dbeta,
                        float* dx, bool accumulate) {
  backward_pass(x, [dy](int64_t i) { return dy[i]; }, n, channels, spatial, mean, inv_std, gamma, dgamma, dbeta, dx,
                accumulate);
}

void batchnorm_relu_backward(const float* x, const float* y, const float* dy, int64_t n, int64_t channels,
                             int64_t spatial, const float* mean, const float* inv_std, const float* gamma,
                             float* dgamma, float* dbeta, float* dx, bool accumulate) {
  backward_pass(x, [y, dy](int64_t i) { return relu_backward(y[i], dy[i]); }, n, channels, spatial, mean, inv_std,
                gamma, dgamma, dbeta, dx, accumulate);
}

void batchnorm_add_relu_normalize(const float* x, const float* shortcut, int64_t n, int64_t channels, int64_t spatial,
                                  const float* mean, const float* inv_std, const float* gamma, const float* beta,
                                  float* y) {
  normalize_pass<true>(x, shortcut, n, channels, spatial, mean, inv_std, gamma, beta, y);
}

void batchnorm_add_relu_backward(const float* x, const float* y, const float* dy, int64_t n, int64_t channels,
                                 int64_t spatial, const float* mean, const float* inv_std, const float* gamma,
                                 float* dgamma, float* dbeta, float* dx, bool accumulate, float* dshortcut,
                                 bool accumulate_shortcut) {
  const auto masked = [y, dy](int64_t i) { return relu_backward(y[i], dy[i]); };
  if (!dshortcut) {
    backward_pass(x, masked, n, channels, spatial, mean, inv_std, gamma, dgamma, dbeta, dx, accumulate);
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
    backward_pass(x, stored, masked, n, channels, spatial, mean, inv_std, gamma, dgamma, dbeta, dx, accumulate);
  else
    backward_pass(x, stored, [dshortcut](int64_t i) { return dshortcut[i]; }, n, channels, spatial, mean, inv_std,
                  gamma, dgamma, dbeta, dx, accumulate);
}

void batchnorm_update_running(float* running_mean, float* running_var, const float* mean, const float* biased_var,
                              int64_t channels, int64_t values_per_channel, float momentum) {
  for (int64_t c = 0; c < channels; ++c) {
    running_mean[c] = bn_running_update(running_mean[c], mean[c], momentum);
    running_var[c] = bn_running_update(running_var[c], bn_unbiased_var(biased_var[c], values_per_channel), momentum);
  }
}

}  // namespace lockstep::cpu
