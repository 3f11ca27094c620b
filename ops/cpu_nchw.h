#pragma once
// The CPU references compute in NCHW (and filters in [O, C, K, K]); an op
// handed NHWC tensors on the CPU that has no channels-last loop of its own
// (pooling, the im2col convolution, the bias gradient) runs on NCHW copies:
// in() converts an input, out() gives an NCHW buffer for an output (filled
// with its current contents when the op reads or adds to it), finish()
// converts the outputs back. Tensors already NCHW pass through untouched, so
// the NCHW path costs nothing and keeps its bits. The CPU's hot ops take
// NHWC natively: oneDNN's convolutions (ops/conv.cpp) and batch norm
// (kernels/cpu/batchnorm_cpu.h, in NCHW's order of sums).
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace lockstep::ops {

class CpuNchw {
public:
  const float* in(const Tensor& t);
  float* out(Tensor& t, bool read);
  // Null stays null (an output the caller does not want).
  float* out(Tensor* t, bool read) { return t ? out(*t, read) : nullptr; }
  void finish();

private:
  std::vector<Tensor> inputs_;
  std::vector<std::pair<Tensor*, Tensor>> outputs_;  // the op's tensor and its NCHW copy
};

}  // namespace lockstep::ops
