#include "emu/cudnn/conv_problem.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "emu/cudnn/layout.h"
#include "emu/runtime/emu_runtime.h"
#include "emu/cudnn/direct_math.h"
#include "kernels/tf32_math.h"

namespace lockstep::emu::cudnn {

namespace {

// The descriptor roles of each direction, for messages.
struct Names {
  const char* x;
  const char* y;
  const char* w;
};
Names names(Direction d) {
  switch (d) {
    case Direction::forward: return {"x", "y", "w"};
    case Direction::backward_data: return {"dx", "dy", "w"};
    default: return {"x", "dy", "dw"};
  }
}

// Two emulated algorithms per direction: one that keeps its column buffer in
// the caller's workspace (one sample's columns, direct_math.h) and one that
// needs none. Determinism is what cuDNN documents for the algorithm, so the
// caller's "deterministic only" filtering is exercised; the computation itself
// is the stand-in's own deterministic one either way.
const Algorithm kForward[] = {
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, true, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, true, true, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, false, false, CUDNN_DETERMINISTIC},
};
const Algorithm kBackwardData[] = {
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, true, true, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, true, false, CUDNN_NON_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, false, false, CUDNN_DETERMINISTIC},
};
const Algorithm kBackwardFilter[] = {
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, true, true, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, true, false, CUDNN_NON_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, false, false, CUDNN_NON_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, false, false, CUDNN_DETERMINISTIC},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, false, false, CUDNN_DETERMINISTIC},
};

cudnnStatus_t check_aligned(const void* p, size_t alignment, const char* call, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0)
    return fail(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
                at(call, std::string(what) + " is not aligned to its " + std::to_string(alignment) + "-byte elements"));
  return CUDNN_STATUS_SUCCESS;
}

const char* type_name(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_FLOAT: return "CUDNN_DATA_FLOAT";
    case CUDNN_DATA_BFLOAT16: return "CUDNN_DATA_BFLOAT16";
    case CUDNN_DATA_HALF: return "CUDNN_DATA_HALF";
    case CUDNN_DATA_DOUBLE: return "CUDNN_DATA_DOUBLE";
    default: return "another data type";
  }
}

// The data-type configurations of cuDNN's legacy convolutions (the cuDNN API
// reference, cudnn_cnn library: the "Supported configurations" tables of
// cudnnConvolutionForward, cudnnConvolutionBackwardData and
// cudnnConvolutionBackwardFilter): x, w and y (dx, dy, dw) share one data
// type, and the convolution descriptor names the compute type. Of them the
// stand-in computes FLOAT_CONFIG (float data, float compute) and
// PSEUDO_BFLOAT16_CONFIG (bf16 data, float compute). There is no
// configuration with bf16 x and dy and a float dw, nor a bf16 compute type:
// cuDNN refuses those, so the stand-in does too (NOT_SUPPORTED_DATA_TYPE).
cudnnStatus_t check_types(const char* call, const Names& n, cudnnDataType_t x, cudnnDataType_t w, cudnnDataType_t y,
                          cudnnDataType_t compute) {
  if (x != w || y != x)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                at(call, std::string(n.x) + " " + type_name(x) + ", " + n.w + " " + type_name(w) + " and " + n.y +
                             " " + type_name(y) + ": a convolution's tensors share one data type"));
  if (x != CUDNN_DATA_FLOAT && x != CUDNN_DATA_BFLOAT16)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                at(call, std::string(type_name(x)) + " data is not emulated (float and bf16 are)"));
  if (compute != CUDNN_DATA_FLOAT)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                at(call, std::string(type_name(x)) + " data needs a CUDNN_DATA_FLOAT compute type (" +
                             (x == CUDNN_DATA_FLOAT ? "FLOAT_CONFIG" : "PSEUDO_BFLOAT16_CONFIG") + "), not " +
                             type_name(compute)));
  return CUDNN_STATUS_SUCCESS;
}

// Every math type but CUDNN_FMA_MATH lets cuDNN run a float convolution on
// tensor cores in TF32 (Ampere and later): its operands are rounded to TF32
// before the products, which accumulate in FP32.
bool tf32_operands(cudnnMathType_t math) { return math != CUDNN_FMA_MATH; }

void round_to_tf32(std::vector<float>& v) {
  for (float& x : v) x = lockstep::round_to_tf32(x);
}

}  // namespace

DirectConv direct(const ConvGeometry& g) {
  return {g.batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel, g.stride, g.padding, g.out_h, g.out_w};
}

cudnnStatus_t resolve(Direction direction, const char* call, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                      cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, ConvProblem& out) {
  const Names n = names(direction);
  if (cudnnStatus_t s = check_tensor(x, call, n.x)) return s;
  if (cudnnStatus_t s = check_tensor(y, call, n.y)) return s;
  if (!w || !conv) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, at(call, "filter or convolution descriptor is null"));
  if (!w->set || !conv->set) return fail(CUDNN_STATUS_BAD_PARAM, at(call, "filter or convolution descriptor never set"));
  if (cudnnStatus_t s = check_types(call, n, x->type, w->type, y->type, conv->compute)) return s;
  if (w->format == CUDNN_TENSOR_NCHW_VECT_C)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, at(call, "CUDNN_TENSOR_NCHW_VECT_C filters are not emulated"));
  if (conv->groups != 1)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                at(call, "group count " + std::to_string(conv->groups) + " (the emulator computes groups of 1)"));
  if (conv->dilation[0] != 1 || conv->dilation[1] != 1)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, at(call, "dilation other than 1 is not emulated"));
  if (conv->mode != CUDNN_CROSS_CORRELATION)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, at(call, "CUDNN_CONVOLUTION (flipped kernel) is not emulated"));
  if (x->dims[1] != w->dims[1])
    return fail(CUDNN_STATUS_BAD_PARAM, at(call, std::string(n.x) + " " + dims_text(x->dims) + " has " +
                                                     std::to_string(x->dims[1]) + " channels, the filter " +
                                                     dims_text(w->dims) + " " + std::to_string(w->dims[1])));
  // The stand-in computes square kernels with one stride and one padding.
  if (w->dims[2] != w->dims[3])
    return fail(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, at(call, "non-square filters are not emulated"));
  if (conv->pad[0] != conv->pad[1] || conv->stride[0] != conv->stride[1])
    return fail(CUDNN_STATUS_NOT_SUPPORTED, at(call, "different vertical and horizontal padding or stride"));
  ConvGeometry g;
  std::string why = ConvGeometry::make(x->dims[0], x->dims[1], x->dims[2], x->dims[3], w->dims[0], w->dims[2],
                                       conv->stride[0], conv->pad[0], g);
  if (!why.empty()) return fail(CUDNN_STATUS_BAD_PARAM, at(call, why));
  const int expected[4] = {int(g.batch), int(g.out_channels), int(g.out_h), int(g.out_w)};
  for (int i = 0; i < 4; ++i)
    if (y->dims[i] != expected[i])
      return fail(CUDNN_STATUS_BAD_PARAM, at(call, std::string(n.y) + " " + dims_text(y->dims) + " is not the " +
                                                       dims_text(expected) + " that " + n.x + " " +
                                                       dims_text(x->dims) + " and the filter " +
                                                       dims_text(w->dims) + " give"));
  out = ConvProblem{direction, g, *x, *y, filter_as_tensor(*w), conv->math};
  return CUDNN_STATUS_SUCCESS;
}

const Algorithm* algorithms(Direction d, int* count) {
  switch (d) {
    case Direction::forward: *count = int(std::size(kForward)); return kForward;
    case Direction::backward_data: *count = int(std::size(kBackwardData)); return kBackwardData;
    default: *count = int(std::size(kBackwardFilter)); return kBackwardFilter;
  }
}

cudnnStatus_t find_algorithm(Direction d, int algo, const char* call, const Algorithm** out) {
  int count = 0;
  const Algorithm* list = algorithms(d, &count);
  for (int i = 0; i < count; ++i)
    if (list[i].algo == algo) {
      if (!list[i].emulated)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, at(call, "algorithm " + std::to_string(algo) + " is not emulated"));
      *out = &list[i];
      return CUDNN_STATUS_SUCCESS;
    }
  return fail(CUDNN_STATUS_BAD_PARAM, at(call, "unknown algorithm " + std::to_string(algo)));
}

size_t workspace_bytes(const Algorithm& a, const ConvProblem& p) {
  return a.uses_workspace ? size_t(direct_conv_columns(direct(p.g))) * sizeof(float) : 0;
}

cudnnStatus_t run(cudnnHandle_t handle, const char* call, const ConvProblem& p, const Algorithm& a, float alpha,
                  float beta, const ConvPointers& ptr, void* workspace, size_t workspace_size,
                  std::shared_ptr<float> elapsed_ms) {
  if (cudnnStatus_t s = check_handle(handle, call)) return s;
  const int device = handle->device;
  const Names n = names(p.direction);
  // Which descriptor each pointer is laid out by.
  const cudnnTensorStruct *a_layout = &p.x, *b_layout = &p.w, *out_layout = &p.y;
  const char *a_name = n.x, *b_name = n.w, *out_name = n.y;
  if (p.direction == Direction::backward_data) {
    a_layout = &p.w, b_layout = &p.y, out_layout = &p.x;
    a_name = n.w, b_name = n.y, out_name = n.x;
  } else if (p.direction == Direction::backward_filter) {
    b_layout = &p.y, out_layout = &p.w;
    b_name = n.y, out_name = n.w;
  }
  const size_t a_bytes = tensor_span_bytes(*a_layout), b_bytes = tensor_span_bytes(*b_layout),
               out_bytes = tensor_span_bytes(*out_layout);
  if (cudnnStatus_t s = check_device_pointer(ptr.in_a, a_bytes, device, call, a_name)) return s;
  if (cudnnStatus_t s = check_device_pointer(ptr.in_b, b_bytes, device, call, b_name)) return s;
  if (cudnnStatus_t s = check_device_pointer(ptr.out, out_bytes, device, call, out_name)) return s;
  const size_t alignment = element_bytes(p.x.type);
  for (auto [q, name] : {std::pair<const void*, const char*>{ptr.in_a, a_name}, {ptr.in_b, b_name}, {ptr.out, out_name}})
    if (cudnnStatus_t s = check_aligned(q, alignment, call, name)) return s;
  if (self_overlapping(*out_layout))
    return fail(CUDNN_STATUS_BAD_PARAM, at(call, std::string(out_name) + "'s strides make elements overlap"));
  if (ranges_overlap(ptr.out, out_bytes, ptr.in_a, a_bytes) || ranges_overlap(ptr.out, out_bytes, ptr.in_b, b_bytes))
    return fail(CUDNN_STATUS_BAD_PARAM, at(call, std::string(out_name) + " overlaps an input (not in place)"));

  const size_t needed = workspace_bytes(a, p);
  if (workspace_size < needed)
    return fail(CUDNN_STATUS_BAD_PARAM, at(call, "a workspace of " + std::to_string(workspace_size) +
                                                     " bytes is smaller than the " + std::to_string(needed) +
                                                     " bytes algorithm " + std::to_string(a.algo) + " needs"));
  if (workspace_size > 0) {
    if (!workspace)
      return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, at(call, "workspace is null but its size is not 0"));
    if (cudnnStatus_t s = check_device_pointer(workspace, workspace_size, device, call, "workspace")) return s;
    if (cudnnStatus_t s = check_aligned(workspace, alignof(float), call, "workspace")) return s;
  }

  const bool use_workspace = a.uses_workspace;
  auto work = [p, alpha, beta, ptr, workspace, use_workspace, elapsed_ms] {
    const auto start = std::chrono::steady_clock::now();
    const DirectConv g = direct(p.g);
    std::vector<float> own_scratch;
    float* scratch = static_cast<float*>(workspace);
    if (!use_workspace) {
      own_scratch.resize(size_t(direct_conv_columns(g)));
      scratch = own_scratch.data();
    }
    std::vector<float> xs(size_t(tensor_count(p.x))), ys(size_t(tensor_count(p.y))), ws(size_t(tensor_count(p.w)));
    // bf16 operands are TF32 values already: only float ones are rounded.
    const bool tf32 = tf32_operands(p.math) && p.x.type == CUDNN_DATA_FLOAT;
    // The two operands of the direction, gathered from their layouts and, in
    // TF32 math, rounded as the tensor cores take them.
    auto operands = [&](std::vector<float>& a, const cudnnTensorStruct& a_layout, std::vector<float>& b,
                        const cudnnTensorStruct& b_layout) {
      gather(a_layout, ptr.in_a, a.data());
      gather(b_layout, ptr.in_b, b.data());
      if (tf32) {
        round_to_tf32(a);
        round_to_tf32(b);
      }
    };
    switch (p.direction) {
      case Direction::forward:
        operands(xs, p.x, ws, p.w);
        direct_conv_forward(g, xs.data(), ws.data(), ys.data(), scratch);
        blend(p.y, ys.data(), alpha, beta, ptr.out);
        break;
      case Direction::backward_data:
        operands(ws, p.w, ys, p.y);
        direct_conv_backward_data(g, ys.data(), ws.data(), xs.data(), scratch);
        blend(p.x, xs.data(), alpha, beta, ptr.out);
        break;
      case Direction::backward_filter:
        operands(xs, p.x, ys, p.y);
        direct_conv_backward_filter(g, xs.data(), ys.data(), ws.data(), scratch);
        blend(p.w, ws.data(), alpha, beta, ptr.out);
        break;
    }
    if (elapsed_ms)
      *elapsed_ms = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  cudaError_t e = enqueue(handle->stream, call, std::move(work));
  if (e != cudaSuccess)
    return fail(CUDNN_STATUS_EXECUTION_FAILED_CUDART, at(call, std::string("queueing on the stream failed: ") +
                                                                   cudaGetErrorName(e)));
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace lockstep::emu::cudnn
