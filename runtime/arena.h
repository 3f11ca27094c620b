#pragma once
// Parameter arenas of one model replica: every parameter lives in one flat
// buffer, its gradient at the same offset of a second and its momentum in a
// third, so the all-reduce and the optimizer are one call each over them.
// Running statistics (BN) live in a fourth arena, outside the optimizer.
#include <string>
#include <vector>

#include "runtime/shape.h"
#include "runtime/tensor.h"
#include "kernels/arena_segment.h"

namespace lockstep {

enum class Init {
  zeros,
  ones,
  fan_in_uniform,   // U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's default for conv/linear
  fan_out_normal,   // N(0, 2/fan_out), He et al. for ResNet convolutions
  fan_in_normal,    // N(0, 2/fan_in), He et al.: keeps the signal through a stack of linear + ReLU
};

struct ParamSpec {
  std::string name;
  Shape shape;
  Init init = Init::zeros;
  bool decay = false;  // weight decay applies (conv/linear weights)
  int64_t fan_in = 0;  // for a bias: its weight's fan-in; 0 = from the shape
};

struct ParamEntry {
  std::string name;
  Shape shape;
  int64_t offset = 0;  // elements from the arena start
  bool decay = false;
  Init init = Init::zeros;
  int64_t fan_in = 0;
};

class ParameterArenas {
public:
  // Each tensor starts at a multiple of `alignment` elements (16 floats = 64
  // bytes), so vectorised kernels can run on every segment.
  static constexpr int64_t alignment = 16;

  ParameterArenas() = default;
  ParameterArenas(const std::vector<ParamSpec>& specs, Device device, bool with_momentum);

  int64_t total() const { return total_; }
  const std::vector<ParamEntry>& entries() const { return entries_; }
  const std::vector<ArenaSegment>& segments() const { return segments_; }
  Tensor param(size_t i) const { return params.view(entries_[i].offset, entries_[i].shape); }
  Tensor grad(size_t i) const { return grads.view(entries_[i].offset, entries_[i].shape); }

  Tensor params, grads, momentum;  // flat [total]; momentum undefined when not asked for
  // AdamW: momentum holds exp_avg and this the second moment (exp_avg_sq),
  // flat [total]; undefined under SGD.
  Tensor exp_avg_sq;
  // Gives the arenas AdamW's second-moment arena, zeros (once; before any
  // step, while nothing else runs on the device).
  void add_adamw_state();
  // --ema: the exponential moving average of the weights (flat [total], the
  // same offsets; the optimizer's pass moves it) and of the running
  // statistics (the model's state arena's size; ops::ema_average after their
  // combination); undefined without a moving average.
  Tensor ema, ema_state;
  // Gives the arenas their averages, starting from the weights and from
  // `state` (the running statistics; may be empty), as timm's copy of the
  // model (once; before any step, while nothing else runs on the device).
  void add_ema(const Tensor& state);
  // The averages become the weights and statistics they are now (a resumed
  // checkpoint that kept none).
  void restart_ema(const Tensor& state);
  // Precision bf16: the weights rounded to bf16 (DType::bf16, flat [total],
  // the same offsets, padding zero), the copy convolutions and linear layers
  // read; undefined in the other precisions. sgd_step rewrites it with every
  // update, in the same pass. Code that writes `params` any other way sets
  // params_bf16_stale, and the copy is made again from params before it is
  // next read.
  Tensor params_bf16;
  bool params_bf16_stale = true;

private:
  std::vector<ParamEntry> entries_;
  std::vector<ArenaSegment> segments_;
  int64_t total_ = 0;
};

// Fills every parameter from its Init with a generator seeded by `seed`, so the
// same seed gives the same model on any device and any replica.
void initialize_parameters(ParameterArenas& arenas, uint64_t seed);

}  // namespace lockstep
