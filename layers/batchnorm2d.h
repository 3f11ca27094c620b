#pragma once
// BatchNorm2d: per channel, y = weight * (x - mean) / sqrt(var + eps) + bias
// over [N, C, H, W]. Training uses the batch mean and biased variance over
// N*H*W, writes them to batch_norm_state() for the replica manager (which alone
// updates the running statistics, from all replicas' statistics), and saves the
// mean and 1/sqrt(var + eps) for backward; eval uses the running statistics.
// Backward (after a training forward) writes dweight and dbias and writes or
// adds dx, the full gradient through the batch statistics. With
// ContextOptions::sync_batch_norm and a replica group of several replicas,
// the statistics (and the gradient's means through them) are those of all
// replicas together (ops/batchnorm_sync.h); batch_norm_state() still holds
// this replica's own, which the end-of-step combination expects.
//
// BatchNorm2d::with_relu() is batch norm followed by a ReLU in one layer: the
// output is max(bn(x), 0), computed in the normalising pass and differentiated
// from that output (ops::batchnorm_relu_*), so the activations are read and
// written once instead of twice each way. Its parameters and state are the
// plain layer's (checkpoints do not change); the results are equal bit for bit.
//
// BatchNorm2d::with_add_relu() is the tail of a residual block in one layer:
// two inputs [x, shortcut] and the output max(bn(x) + shortcut, 0), where the
// graph held bn, add and relu nodes (ops::batchnorm_add_relu_*). Backward
// writes the shortcut's gradient (the masked dy) as it forms it and runs the
// batch-norm backward from that buffer. Same parameters, state and results
// (bit for bit) as the three nodes. Evaluation and synchronised batch norm
// apply the add and the ReLU after the batch norm, as separate passes.
#include <memory>

#include "layers/layer.h"

namespace lockstep {

class BatchNorm2d final : public Layer {
public:
  explicit BatchNorm2d(float eps = 1e-5f, float momentum = 0.1f);
  static std::unique_ptr<BatchNorm2d> with_relu();
  static std::unique_ptr<BatchNorm2d> with_add_relu();
  bool fused_relu() const { return relu_; }
  bool fused_add() const { return add_; }
  float eps() const { return eps_; }  // added to the variance before its square root

  std::string type() const override { return "batchnorm2d"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  // "weight" [C] (ones) and "bias" [C] (zeros), without weight decay.
  std::vector<ParamSpec> parameter_specs(const std::vector<Shape>& inputs) const override;
  // "running_mean" [C] (zeros) and "running_var" [C] (ones).
  std::vector<ParamSpec> state_specs(const std::vector<Shape>& inputs) const override;
  void bind(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
            const std::vector<Tensor>& state) override;

  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;

  BatchNormState* batch_norm_state() override;
  // Backward reads x (never the shortcut) and, with a fused ReLU, the output it masks by.
  bool backward_reads_input(size_t i) const override { return i == 0; }
  bool backward_reads_output() const override { return relu_; }

private:
  // Checks a batch [N, C, H, W] against the bound channel count.
  void check_batch(const Tensor& x, const char* pass) const;
  // (Re)allocates the per-channel buffers on `device`.
  void allocate_buffers(Device device);

  float eps_;
  bool relu_ = false;
  bool add_ = false;  // a second input, the shortcut, added before the ReLU
  Tensor weight_, bias_, weight_grad_, bias_grad_;
  Tensor saved_mean_, saved_inv_std_;  // [C], from the last training forward
  int64_t saved_values_ = -1;          // N*H*W of that forward; -1 until one ran (or after an eval forward)
  BatchNormState state_;
  bool synced_ = false;  // the last training forward used all replicas' statistics
  Tensor sync_buffer_;   // its all-reduce buffer, kept for backward
};

}  // namespace lockstep
