#include "kernels/cuda/cudnn_plans.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/cuda_libraries.h"
#include "base/error.h"
#include "base/environment.h"

namespace lockstep {

namespace {

int to_int(int64_t v, const char* what) {
  LS_CHECK(v >= 0 && v <= INT_MAX, "cuDNN takes 32-bit extents: ", what, " ", v, " is too large");
  return static_cast<int>(v);
}

std::string conv_text(const ConvGeometry& g) {
  return "input [" + std::to_string(g.batch) + ", " + std::to_string(g.in_channels) + ", " + std::to_string(g.in_h) +
         ", " + std::to_string(g.in_w) + "], weight [" + std::to_string(g.out_channels) + ", " +
         std::to_string(g.in_channels) + ", " + std::to_string(g.kernel) + ", " + std::to_string(g.kernel) +
         "], stride " + std::to_string(g.stride) + ", padding " + std::to_string(g.padding);
}

const char* direction_name(ConvDirection d) {
  switch (d) {
    case ConvDirection::forward: return "conv2d forward";
    case ConvDirection::backward_data: return "conv2d backward data";
    default: return "conv2d backward filter";
  }
}

// The three directions differ only in their perf struct and their calls;
// these adapters give them one shape so the choice is written once.
struct Forward {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr int count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  static cudnnStatus_t heuristics(cudnnHandle_t h, const ConvPlan& p, int n, int* got, Perf* out) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, p.x.get(), p.w.get(), p.desc(ConvDirection::forward), p.y.get(),
                                                  n, got, out);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const ConvPlan& p, const ConvBuffers& b, void* output, int n, int* got,
                            Perf* out, void* ws, size_t ws_bytes) {
    return cudnnFindConvolutionForwardAlgorithmEx(h, p.x.get(), b.x, p.w.get(), b.w, p.desc(ConvDirection::forward),
                                                  p.y.get(), output, n, got, out, ws, ws_bytes);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvPlan& p, int algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, p.x.get(), p.w.get(), p.desc(ConvDirection::forward), p.y.get(),
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
  }
  static size_t output_elements(const ConvGeometry& g) { return size_t(g.batch * g.out_sample()); }
};

struct BackwardData {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr int count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  static cudnnStatus_t heuristics(cudnnHandle_t h, const ConvPlan& p, int n, int* got, Perf* out) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w.get(), p.y.get(), p.desc(ConvDirection::backward_data),
                                                       p.x.get(), n, got, out);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const ConvPlan& p, const ConvBuffers& b, void* output, int n, int* got,
                            Perf* out, void* ws, size_t ws_bytes) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(h, p.w.get(), b.w, p.y.get(), b.dy,
                                                       p.desc(ConvDirection::backward_data), p.x.get(), output, n,
                                                       got, out, ws, ws_bytes);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvPlan& p, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p.w.get(), p.y.get(), p.desc(ConvDirection::backward_data),
                                                        p.x.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
                                                        bytes);
  }
  static size_t output_elements(const ConvGeometry& g) { return size_t(g.batch * g.in_sample()); }
};

struct BackwardFilter {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr int count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  static cudnnStatus_t heuristics(cudnnHandle_t h, const ConvPlan& p, int n, int* got, Perf* out) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p.x.get(), p.y.get(),
                                                         p.desc(ConvDirection::backward_filter), p.w.get(), n, got,
                                                         out);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const ConvPlan& p, const ConvBuffers& b, void* output, int n, int* got,
                            Perf* out, void* ws, size_t ws_bytes) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, p.x.get(), b.x, p.y.get(), b.dy,
                                                         p.desc(ConvDirection::backward_filter), p.w.get(), output, n,
                                                         got, out, ws, ws_bytes);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvPlan& p, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p.x.get(), p.y.get(),
                                                          p.desc(ConvDirection::backward_filter), p.w.get(),
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
  static size_t output_elements(const ConvGeometry& g) { return size_t(g.weight_numel()); }
};

bool uses_tensor_cores(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// Device memory of a search, given back when it goes out of scope.
struct Scratch {
  explicit Scratch(CudaLibraries& owner) : owner(owner) {}
  ~Scratch() {
    if (ptr) owner.release_scratch(ptr, bytes);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void allocate(size_t n) {
    ptr = owner.allocate_scratch(n);
    bytes = n;
  }
  CudaLibraries& owner;
  void* ptr = nullptr;
  size_t bytes = 0;
};

// Tensor-core math changes a float convolution's operands (TF32); a bf16
// one's it leaves exact, so only float plans honour allow_tf32.
bool tensor_cores_allowed(const CudaLibraries& state, const ConvPlan& plan) {
  return state.allow_tf32 || plan.type == CUDNN_DATA_BFLOAT16;
}

// The math a search runs with; the choice then fixes its own. bf16 needs
// CUDNN_TENSOR_OP_MATH: under the default math cuDNN ran every bf16
// convolution on an H200 on its non-tensor-core kernels (dgrad2d direct,
// wgrad alg1, convolve_common_engine_float), 370 times the roofline bound.
// Float: the default math (TF32 on tensor cores) when allowed, else FMA.
cudnnMathType_t search_math(const CudaLibraries& state, const ConvPlan& plan) {
  if (plan.type == CUDNN_DATA_BFLOAT16) return CUDNN_TENSOR_OP_MATH;
  return state.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

template <typename Perf>
bool acceptable(const Perf& p, const CudaLibraries& state, const ConvPlan& plan, size_t workspace_cap) {
  if (p.status != CUDNN_STATUS_SUCCESS || p.memory > workspace_cap) return false;
  if (state.deterministic && p.determinism != CUDNN_DETERMINISTIC) return false;
  if (!tensor_cores_allowed(state, plan) && uses_tensor_cores(p.mathType)) return false;
  return true;
}

// One entry of cuDNN's answer, for messages and the log: "algo 1 (status 0,
// deterministic, math 2, 1024 bytes)".
template <typename Perf> std::string perf_text(const Perf& p) {
  return "algo " + std::to_string(static_cast<int>(p.algo)) + " (status " + std::to_string(static_cast<int>(p.status)) +
         (p.determinism == CUDNN_DETERMINISTIC ? ", deterministic" : ", non-deterministic") + ", math " +
         std::to_string(static_cast<int>(p.mathType)) + ", " + std::to_string(p.memory) + " bytes" +
         (p.time >= 0.0f ? ", " + std::to_string(p.time) + " ms" : "") + ")";
}

// LOCKSTEP_CUDNN_LOG set: every choice goes to stderr (which algorithm each
// shape and direction got, and whether a timed search chose it): what a run
// on a real GPU needs to explain a time or a rounding difference.
bool log_choices() {
  static const bool on = [] {
    const std::optional<std::string> v = environment_value(EnvironmentVariable::cudnn_log);
    return v && *v != "0";
  }();
  return on;
}

// The scratch of a search over every algorithm, when the heuristics listed
// none that fits.
constexpr size_t kFallbackSearchBytes = size_t(256) << 20;

template <typename Dir>
ConvAlgorithm choose(CudaLibraries& state, ConvPlan& plan, ConvDirection direction, const ConvBuffers& buffers) {
  using Perf = typename Dir::Perf;
  const size_t limit = state.workspace_limit_bytes();
  cudnnHandle_t handle = state.cudnn;

  Perf listed[Dir::count];
  int listed_count = 0;
  LS_CUDNN_CHECK(Dir::heuristics(handle, plan, Dir::count, &listed_count, listed));
  std::vector<Perf> candidates;
  size_t most_workspace = 0;
  for (int i = 0; i < listed_count; ++i)
    if (acceptable(listed[i], state, plan, limit)) {
      candidates.push_back(listed[i]);
      most_workspace = std::max(most_workspace, listed[i].memory);
    }
  // The heuristics can leave out every algorithm that fits (an H200's cuDNN
  // 9.19 listed none for an FP32 backward-data of stride 2 without tensor
  // cores): then a search over every algorithm, in a bounded scratch.
  const bool listed_one = !candidates.empty();
  const size_t search_workspace = listed_one ? most_workspace : std::min(limit, kFallbackSearchBytes);
  auto none_found = [&]() {
    std::string offered;
    for (int i = 0; i < listed_count; ++i) offered += (i ? "; " : "") + perf_text(listed[i]);
    LS_FAIL(direction_name(direction), " on cuda:", state.device, ": no cuDNN algorithm for ",
            conv_text(plan.geometry), plan.type == CUDNN_DATA_BFLOAT16 ? " in bf16" : "", " within a workspace of ",
            limit, " bytes", state.deterministic ? " that is deterministic" : "",
            tensor_cores_allowed(state, plan) ? "" : " without tensor cores",
            " (raise ContextOptions::workspace_limit_bytes, or allow non-deterministic algorithms); the heuristics "
            "offered: ",
            offered.empty() ? "nothing" : offered, "; a search over every algorithm found none either");
  };

  Perf best{};
  if (listed_one) best = candidates.front();
  bool timed_choice = false;
  // Deterministic: the heuristics' first deterministic algorithm, untimed.
  // A timed search can rank two algorithms differently from one context to
  // the next, and different algorithms round differently, so two contexts
  // (two runs, two replica managers) would not agree bit for bit; the
  // heuristics answer the same for the same shape on the same device.
  // Otherwise timing on the real shapes, with scratch the search may use
  // freely: the workspace, and the output when the op's own must not be
  // overwritten.
  Scratch scratch(state), scratch_output(state);
  bool have_scratch = !state.deterministic || !listed_one;
  if (have_scratch) {
    try {
      scratch.allocate(search_workspace);
      if (!buffers.output)
        scratch_output.allocate(Dir::output_elements(plan.geometry) * cudnn_element_bytes(plan.type));
    } catch (const Error&) {
      if (!listed_one) throw;
      have_scratch = false;  // short of memory: keep the heuristics' choice
    }
  }
  if (have_scratch) {
    void* output = buffers.output ? buffers.output : scratch_output.ptr;
    Perf timed[Dir::count];
    int timed_count = 0;
    cudnnStatus_t status =
        Dir::find(handle, plan, buffers, output, Dir::count, &timed_count, timed, scratch.ptr, search_workspace);
    // Results come fastest first; the scratch must outlive the search's kernels.
    LS_CUDA_CHECK(cudaStreamSynchronize(state.compute_stream));
    if (status == CUDNN_STATUS_SUCCESS) {
      for (int i = 0; i < timed_count; ++i) {
        if (!acceptable(timed[i], state, plan, search_workspace)) continue;
        // Deterministic (reached only when the heuristics listed none): the
        // lowest algorithm number, which no timing can reorder.
        if (state.deterministic) {
          if (!timed_choice || timed[i].algo < best.algo) best = timed[i];
          timed_choice = true;
          continue;
        }
        best = timed[i];
        timed_choice = true;
        break;
      }
    }
  }
  if (!listed_one && !timed_choice) none_found();

  ConvAlgorithm chosen;
  chosen.chosen = true;
  chosen.algo = static_cast<int>(best.algo);
  // TF32 off: FMA math whatever the search reported (a default-math result
  // on Ampere and later could otherwise take the TF32 path); bf16 keeps it.
  chosen.math = tensor_cores_allowed(state, plan) ? best.mathType : CUDNN_FMA_MATH;
  LS_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.desc(direction), chosen.math));
  LS_CUDNN_CHECK(Dir::workspace(handle, plan, chosen.algo, &chosen.workspace_bytes));
  chosen.workspace_bytes = std::max(chosen.workspace_bytes, static_cast<size_t>(best.memory));
  if (log_choices())
    std::fprintf(stderr, "lockstep cudnn: cuda:%d %s %s%s %s (filter %s): %s, %s, runs with math %d\n", state.device,
                 direction_name(direction), conv_text(plan.geometry).c_str(),
                 plan.type == CUDNN_DATA_BFLOAT16 ? " bf16" : " float", memory_format_name(plan.format),
                 memory_format_name(plan.filter_format), perf_text(best).c_str(),
                 !listed_one ? "found by a search over every algorithm"
                 : timed_choice ? "timed fastest"
                                : "heuristics' first",
                 static_cast<int>(chosen.math));
  return chosen;
}

}  // namespace

namespace {
// cuDNN's name for a memory format (tensors and filters alike).
cudnnTensorFormat_t cudnn_format(MemoryFormat format) {
  return format == MemoryFormat::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}
}  // namespace

size_t cudnn_element_bytes(cudnnDataType_t type) { return type == CUDNN_DATA_BFLOAT16 ? 2 : sizeof(float); }

TensorDescriptor make_tensor_descriptor(int64_t n, int64_t c, int64_t h, int64_t w, MemoryFormat format,
                                        cudnnDataType_t type) {
  cudnnTensorDescriptor_t raw = nullptr;
  LS_CUDNN_CHECK(cudnnCreateTensorDescriptor(&raw));
  TensorDescriptor desc(raw);
  LS_CUDNN_CHECK(cudnnSetTensor4dDescriptor(raw, cudnn_format(format), type, to_int(n, "batch"),
                                            to_int(c, "channels"), to_int(h, "height"), to_int(w, "width")));
  return desc;
}

ConvPlan& CudnnPlans::conv(const ConvGeometry& g, MemoryFormat format, MemoryFormat filter_format,
                           cudnnDataType_t type) {
  ConvKey key{g.batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel, g.stride, g.padding, format,
              filter_format, type};
  auto it = conv_.find(key);
  if (it != conv_.end()) return *it->second;

  auto plan = std::make_unique<ConvPlan>();
  plan->geometry = g;
  plan->type = type;
  plan->format = format;
  plan->filter_format = filter_format;
  plan->x = make_tensor_descriptor(g.batch, g.in_channels, g.in_h, g.in_w, format, type);
  plan->y = make_tensor_descriptor(g.batch, g.out_channels, g.out_h, g.out_w, format, type);
  cudnnFilterDescriptor_t filter = nullptr;
  LS_CUDNN_CHECK(cudnnCreateFilterDescriptor(&filter));
  plan->w = FilterDescriptor(filter);
  LS_CUDNN_CHECK(cudnnSetFilter4dDescriptor(filter, type, cudnn_format(filter_format),
                                            to_int(g.out_channels, "output channels"),
                                            to_int(g.in_channels, "input channels"), to_int(g.kernel, "kernel"),
                                            to_int(g.kernel, "kernel")));
  for (ConvolutionDescriptor& d : plan->conv) {
    cudnnConvolutionDescriptor_t conv = nullptr;
    LS_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    d = ConvolutionDescriptor(conv);
    // Cross-correlation, as the CPU reference (and every framework) computes;
    // FP32 compute for float and bf16 data alike (FLOAT_CONFIG, PSEUDO_BFLOAT16_CONFIG).
    LS_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, to_int(g.padding, "padding"), to_int(g.padding, "padding"),
                                                   to_int(g.stride, "stride"), to_int(g.stride, "stride"), 1, 1,
                                                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  }
  ConvPlan& ref = *plan;
  conv_.emplace(key, std::move(plan));
  return ref;
}

PoolPlan& CudnnPlans::pool(const PoolGeometry& g, PoolMode mode, MemoryFormat format, int64_t channels,
                           cudnnDataType_t type) {
  LS_CHECK(format == MemoryFormat::nchw || (channels > 0 && g.planes % channels == 0), "NHWC pooling of ", g.planes,
           " planes in ", channels, " channels");
  if (format == MemoryFormat::nchw) channels = 1;  // the NCHW plan does not depend on it
  PoolKey key{g.planes, g.in_h, g.in_w, g.window.kernel, g.window.stride, g.window.padding, static_cast<int>(mode),
              format, channels, type};
  auto it = pool_.find(key);
  if (it != pool_.end()) return *it->second;

  auto plan = std::make_unique<PoolPlan>();
  // Pooling treats every channel of every sample alike: in NCHW, one plane per
  // "sample". NHWC interleaves the channels, so it needs the true [N, C].
  const int64_t n = g.planes / channels;
  plan->x = make_tensor_descriptor(n, channels, g.in_h, g.in_w, format, type);
  plan->y = make_tensor_descriptor(n, channels, g.out_h, g.out_w, format, type);
  cudnnPoolingDescriptor_t pool = nullptr;
  LS_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&pool));
  plan->pool = PoolingDescriptor(pool);
  // Deterministic max (the gradient of each window goes to one place), NaN
  // propagated as the CPU reference does; the average divides by kernel^2.
  cudnnPoolingMode_t cudnn_mode =
      mode == PoolMode::max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  const PoolWindow& w = g.window;
  LS_CUDNN_CHECK(cudnnSetPooling2dDescriptor(pool, cudnn_mode, CUDNN_PROPAGATE_NAN, w.kernel, w.kernel, w.padding,
                                             w.padding, w.stride, w.stride));
  PoolPlan& ref = *plan;
  pool_.emplace(key, std::move(plan));
  return ref;
}

const ConvAlgorithm& conv_algorithm(CudaLibraries& state, ConvPlan& plan, ConvDirection direction,
                                    const ConvBuffers& buffers) {
  ConvAlgorithm& slot = plan.choice(direction);
  if (slot.chosen) return slot;
  LS_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.desc(direction), search_math(state, plan)));
  switch (direction) {
    case ConvDirection::forward: slot = choose<Forward>(state, plan, direction, buffers); break;
    case ConvDirection::backward_data: slot = choose<BackwardData>(state, plan, direction, buffers); break;
    case ConvDirection::backward_filter: slot = choose<BackwardFilter>(state, plan, direction, buffers); break;
  }
  return slot;
}

CudaLibraries::CudaLibraries() = default;
CudaLibraries::~CudaLibraries() = default;

}  // namespace lockstep
