#pragma once
// Pooling layers on [C, H, W] samples. No parameters, nothing saved: max
// pooling finds each window's arg-max again in backward from its input.
// Backward writes or adds the input gradient per its grad mode.
#include "kernels/pool_geometry.h"
#include "layers/layer.h"

namespace lockstep {

// What max and average pooling share: a checked window (stride 0 means
// stride = kernel; padding at most kernel / 2) and the pooled output shape.
class WindowPool : public Layer {
public:
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  const PoolWindow& window() const { return window_; }

protected:
  WindowPool(const char* type, int kernel, int stride, int padding);
  PoolWindow window_;
};

// Max over kernel x kernel windows; padding counts as -inf, so it is never
// chosen. The gradient goes to each window's arg-max (the first on ties).
class MaxPool2d final : public WindowPool {
public:
  MaxPool2d(int kernel, int stride = 0, int padding = 0) : WindowPool("maxpool2d", kernel, stride, padding) {}
  std::string type() const override { return "maxpool2d"; }
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
};

// Mean over kernel x kernel windows, always divided by kernel^2: padding
// counts as zeros (PyTorch's count_include_pad=True).
class AvgPool2d final : public WindowPool {
public:
  AvgPool2d(int kernel, int stride = 0, int padding = 0) : WindowPool("avgpool2d", kernel, stride, padding) {}
  std::string type() const override { return "avgpool2d"; }
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
};

// [C, H, W] -> [C, 1, 1], the mean of each channel (AdaptiveAvgPool2d(1)).
class GlobalAvgPool final : public Layer {
public:
  std::string type() const override { return "global_avgpool"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  // The gradient is output_grad spread over each window: no activation read.
  bool backward_reads_input(size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }
};

// [C, H, W] -> [C, out_h, out_w] as PyTorch's AdaptiveAvgPool2d((out_h, out_w)):
// output row i averages input rows floor(i*H/out_h) .. ceil((i+1)*H/out_h) - 1
// (and columns alike), so any input size works, a smaller one by repeating
// values.
class AdaptiveAvgPool2d final : public Layer {
public:
  AdaptiveAvgPool2d(int64_t out_h, int64_t out_w);
  std::string type() const override { return "adaptive_avgpool2d"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  void forward(Context& ctx, const std::vector<Tensor>& inputs, Tensor& output, Mode mode,
               const StepInfo& step) override;
  void backward(Context& ctx, const std::vector<Tensor>& inputs, const Tensor& output, const Tensor& output_grad,
                std::vector<Tensor>& input_grads, const std::vector<GradMode>& grad_modes) override;
  bool backward_reads_input(size_t) const override { return false; }
  bool backward_reads_output() const override { return false; }

private:
  int64_t out_h_, out_w_;
};

}  // namespace lockstep
