#include "runtime/arena.h"

#include <cmath>
#include <random>

#include "base/error.h"

namespace lockstep {

ParameterArenas::ParameterArenas(const std::vector<ParamSpec>& specs, Device device, bool with_momentum) {
  int64_t offset = 0;
  for (const ParamSpec& spec : specs) {
    LS_CHECK(spec.shape.numel() > 0, "parameter ", spec.name, " has an empty shape ", spec.shape.str());
    entries_.push_back({spec.name, spec.shape, offset, spec.decay, spec.init, spec.fan_in});
    segments_.push_back({offset, spec.shape.numel(), spec.decay});
    offset += (spec.shape.numel() + alignment - 1) / alignment * alignment;
  }
  total_ = offset;
  Shape flat{std::max<int64_t>(total_, 1)};
  params = Tensor::zeros(flat, device);
  grads = Tensor::zeros(flat, device);
  if (with_momentum) momentum = Tensor::zeros(flat, device);
}

void ParameterArenas::add_adamw_state() {
  if (!exp_avg_sq.defined()) exp_avg_sq = Tensor::zeros(params.shape(), params.device());
}

void ParameterArenas::add_ema(const Tensor& state) {
  if (ema.defined()) return;
  ema = Tensor::zeros(params.shape(), params.device());
  ema_state = Tensor::zeros(state.defined() ? state.shape() : Shape{1}, params.device());
  restart_ema(state);
}

void ParameterArenas::restart_ema(const Tensor& state) {
  if (!ema.defined()) return;
  ema.copy_from(params);
  if (state.defined()) ema_state.copy_from(state);
}

namespace {
int64_t fan_in(const Shape& s) { return s.rank() <= 1 ? s[0] : s.per_sample(); }
int64_t fan_out(const Shape& s) {
  int64_t receptive = s.rank() > 2 ? s.per_sample() / s[1] : 1;
  return s[0] * receptive;
}
}  // namespace

void initialize_parameters(ParameterArenas& arenas, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<float> host(arenas.total(), 0.0f);
  for (const ParamEntry& e : arenas.entries()) {
    float* p = host.data() + e.offset;
    int64_t n = e.shape.numel();
    switch (e.init) {
      case Init::zeros: std::fill(p, p + n, 0.0f); break;
      case Init::ones: std::fill(p, p + n, 1.0f); break;
      case Init::fan_in_uniform: {
        float bound = 1.0f / std::sqrt(static_cast<float>(e.fan_in > 0 ? e.fan_in : fan_in(e.shape)));
        std::uniform_real_distribution<float> dist(-bound, bound);
        for (int64_t i = 0; i < n; ++i) p[i] = dist(gen);
        break;
      }
      case Init::fan_in_normal: {
        std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in(e.shape))));
        for (int64_t i = 0; i < n; ++i) p[i] = dist(gen);
        break;
      }
      case Init::fan_out_normal: {
        std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / static_cast<float>(fan_out(e.shape))));
        for (int64_t i = 0; i < n; ++i) p[i] = dist(gen);
        break;
      }
    }
  }
  if (arenas.total() > 0) arenas.params.view(0, Shape{arenas.total()}).copy_from(Tensor::from_vector(Shape{arenas.total()}, host));
}

}  // namespace lockstep
