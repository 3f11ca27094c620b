#pragma once
// CudnnPlans: the cuDNN descriptors of one context, made once per full shape
// and kept for the context's life, and for each convolution shape the
// algorithm of each direction (forward, backward data, backward filter),
// chosen the first time that direction runs at that shape. Keys hold every
// extent, the batch included, so a smaller last batch gets its own plan
// rather than reusing one tuned, or sized, for another shape.
//
// Choosing an algorithm: cuDNN's heuristics (cudnnGet*_v7) list the
// candidates; those that need more workspace than
// CudaLibraries::workspace_limit_bytes(), that are not deterministic when
// CudaLibraries::deterministic asks for it, or that use tensor cores when
// CudaLibraries::allow_tf32 is off are dropped; cudnnFind*Ex then times the
// rest on the real shapes with a scratch workspace as large as the most
// demanding of them, and the fastest wins. When that scratch cannot be had,
// the heuristics' first acceptable choice is used untimed. When the
// heuristics list no acceptable algorithm, cudnnFind*Ex searches them all
// (the fastest acceptable one wins; when deterministic, the lowest-numbered).
// Math: TF32 allowed runs cuDNN's default math (tensor cores may do FP32
// convolutions in TF32); TF32 off runs CUDNN_FMA_MATH, plain FP32
// arithmetic. LOCKSTEP_CUDNN_LOG=1 prints every choice to stderr.
//
// Data types: every plan is FLOAT_CONFIG (float tensors, float compute) or
// PSEUDO_BFLOAT16_CONFIG (bf16 tensors, float compute: the cuDNN API
// reference's supported configurations of each convolution direction and of
// pooling). The type is part of every key. A bf16 plan searches with
// CUDNN_TENSOR_OP_MATH (under the default math cuDNN keeps bf16 off the
// tensor cores) and is not filtered by allow_tf32: tensor cores take bf16
// operands exactly and accumulate in FP32.
#include <cudnn.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "kernels/conv_geometry.h"
#include "kernels/memory_format.h"
#include "kernels/pool_geometry.h"

namespace lockstep {

class CudaLibraries;

// Move-only owners of cuDNN descriptors (creating one costs no device work).
template <typename Handle, cudnnStatus_t (*Destroy)(Handle)> class CudnnDescriptor {
public:
  CudnnDescriptor() = default;
  explicit CudnnDescriptor(Handle handle) : handle_(handle) {}
  ~CudnnDescriptor() { reset(); }
  CudnnDescriptor(CudnnDescriptor&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = other.handle_;
      other.handle_ = nullptr;
    }
    return *this;
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  Handle get() const { return handle_; }

private:
  void reset() {
    if (handle_) Destroy(handle_);
    handle_ = nullptr;
  }
  Handle handle_ = nullptr;
};

using TensorDescriptor = CudnnDescriptor<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = CudnnDescriptor<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor = CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;

// A packed tensor descriptor of logical [n, c, h, w], stored as `format`
// (CUDNN_TENSOR_NCHW or CUDNN_TENSOR_NHWC), of elements `type`
// (CUDNN_DATA_FLOAT or CUDNN_DATA_BFLOAT16).
TensorDescriptor make_tensor_descriptor(int64_t n, int64_t c, int64_t h, int64_t w,
                                        MemoryFormat format = MemoryFormat::nchw,
                                        cudnnDataType_t type = CUDNN_DATA_FLOAT);

// cuDNN's alpha and beta scalars, passed by address: y = 1 * op(x) + 0 * y
// (the computation's result) or + 1 * y (added onto what y holds).
inline constexpr float kCudnnOne = 1.0f;
inline constexpr float kCudnnZero = 0.0f;

// The cuDNN data type of a tensor's elements: float, or bf16 held as raw bits
// (bf16_bits, kernels/bf16_math.h).
template <typename T> constexpr cudnnDataType_t cudnn_data_type() {
  static_assert(sizeof(T) == 4 || sizeof(T) == 2, "float or bf16_bits");
  return sizeof(T) == 4 ? CUDNN_DATA_FLOAT : CUDNN_DATA_BFLOAT16;
}

// Bytes per element of CUDNN_DATA_FLOAT (4) or CUDNN_DATA_BFLOAT16 (2).
size_t cudnn_element_bytes(cudnnDataType_t type);

enum class ConvDirection { forward, backward_data, backward_filter };

// One direction's choice: the algorithm (cast from the direction's enum), the
// math type it runs with and the workspace it needs.
struct ConvAlgorithm {
  bool chosen = false;
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace_bytes = 0;
};

struct ConvPlan {
  ConvGeometry geometry;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;  // of x, w, y and their gradients; compute is FLOAT
  MemoryFormat format = MemoryFormat::nchw, filter_format = MemoryFormat::nchw;  // for the log
  TensorDescriptor x, y;  // input [N, C, H, W] and output [N, O, OH, OW], in the plan's format
  FilterDescriptor w;     // [O, C, K, K] as KCRS, or KRSC ([O, K, K, C]) for an NHWC filter
  // One convolution descriptor per direction: each carries the math type of
  // the algorithm chosen for that direction.
  ConvolutionDescriptor conv[3];
  ConvAlgorithm algorithm[3];

  cudnnConvolutionDescriptor_t desc(ConvDirection d) const { return conv[static_cast<int>(d)].get(); }
  ConvAlgorithm& choice(ConvDirection d) { return algorithm[static_cast<int>(d)]; }
};

struct PoolPlan {
  // NCHW: [planes, 1, H, W] and [planes, 1, OH, OW]; NHWC: [N, C, H, W] and
  // [N, C, OH, OW] stored channels last (planes = N * C).
  TensorDescriptor x, y;
  PoolingDescriptor pool;
};

enum class PoolMode { max, average };

class CudnnPlans {
public:
  // The plan for a convolution of this geometry (descriptors made on first
  // use), x and y stored as `format`, the filter as `filter_format`, every
  // tensor of data type `type`.
  ConvPlan& conv(const ConvGeometry& g, MemoryFormat format = MemoryFormat::nchw,
                 MemoryFormat filter_format = MemoryFormat::nchw, cudnnDataType_t type = CUDNN_DATA_FLOAT);
  // NHWC pooling needs the channel count (g.planes = N * channels).
  PoolPlan& pool(const PoolGeometry& g, PoolMode mode, MemoryFormat format = MemoryFormat::nchw,
                 int64_t channels = 1, cudnnDataType_t type = CUDNN_DATA_FLOAT);
  size_t conv_plan_count() const { return conv_.size(); }

private:
  struct ConvKey {
    int64_t batch, in_channels, in_h, in_w, out_channels, kernel, stride, padding;
    MemoryFormat format, filter_format;
    cudnnDataType_t type;
    auto operator<=>(const ConvKey&) const = default;
  };
  struct PoolKey {
    int64_t planes, in_h, in_w;
    int kernel, stride, padding, mode;
    MemoryFormat format;
    int64_t channels;
    cudnnDataType_t type;
    auto operator<=>(const PoolKey&) const = default;
  };
  std::map<ConvKey, std::unique_ptr<ConvPlan>> conv_;
  std::map<PoolKey, std::unique_ptr<PoolPlan>> pool_;
};

// The pointers a direction's algorithm search may run on: the op's own
// inputs (read only) and its output. `output` may be null when the op's real
// output must not be overwritten (backward data that accumulates); the search
// then writes into scratch.
struct ConvBuffers {
  const void* x = nullptr;   // input, or input gradient's shape for backward data (unused there)
  const void* w = nullptr;
  const void* dy = nullptr;  // output gradient (backward passes)
  void* output = nullptr;
};

// The algorithm for `direction` of `plan`, chosen on first use as described
// above. Throws an Error naming the shapes when no algorithm fits the limits.
const ConvAlgorithm& conv_algorithm(CudaLibraries& state, ConvPlan& plan, ConvDirection direction,
                                    const ConvBuffers& buffers);

}  // namespace lockstep
