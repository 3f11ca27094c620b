#pragma once
// Dropout: in training keeps each element with probability 1 - p and scales
// it by 1/(1 - p); in evaluation y = x. Stores no mask: backward redraws it
// from (the step's seed, its number, a hash of the layer's name, the global
// element index), with the step of the last forward. No parameters; backward
// writes or adds the input gradient per its grad mode.
// The element index is the index in memory: on an NHWC image batch
// (ContextOptions::memory_format nhwc) the mask is as random but not NCHW's,
// so such a run would not repeat an NCHW one draw for draw. The models put
// dropout after flatten only, where the values are in NCHW order either way.
#include "layers/layer.h"

namespace lockstep {

class Dropout final : public Layer {
public:
  // 0 <= p < 1, else throws.
  explicit Dropout(float p);
  std::string type() const override { return "dropout"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  // Backward redraws the mask: it reads neither input nor output.
  bool backward_reads_input(size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }
  float p() const { return p_; }

private:
  uint64_t salt() const;

  float p_;
  // Backward follows the mode of the last forward: after an eval forward it is the identity too.
  Mode last_mode_ = Mode::train;
  StepInfo last_step_;
};

}  // namespace lockstep
