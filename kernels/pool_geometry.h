#pragma once
// Geometry of 2-D pooling over NCHW planes (floor rounding, symmetric zero or
// -inf padding), shared by the CPU loops, the CUDA kernels and the cuDNN
// descriptors. kernels/ cannot throw lockstep::Error, so validation returns
// the reason as a string (empty when valid) for the caller to throw.
#include <cstdint>
#include <string>

#include "kernels/host_device.h"

namespace lockstep {

struct PoolWindow {
  int kernel = 1;
  int stride = 1;  // already resolved: the layers' "0 = kernel" is not accepted here
  int padding = 0;
};

struct PoolGeometry {
  int64_t planes = 0;  // N * C: pooling treats every channel of every sample alike
  int64_t in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;
  PoolWindow window;
};

inline std::string pool_window_text(const PoolWindow& w) {
  return "kernel " + std::to_string(w.kernel) + ", stride " + std::to_string(w.stride) + ", padding " +
         std::to_string(w.padding);
}

// Why `w` is not a usable window, or "" when it is. Padding is limited to half
// the kernel (as in PyTorch and cuDNN), so no window lies wholly in the padding.
inline std::string pool_window_error(const PoolWindow& w) {
  if (w.kernel < 1) return "kernel " + std::to_string(w.kernel) + " must be at least 1";
  if (w.stride < 1) return "stride " + std::to_string(w.stride) + " must be at least 1";
  if (w.padding < 0) return "padding " + std::to_string(w.padding) + " must not be negative";
  if (2 * w.padding > w.kernel)
    return "padding " + std::to_string(w.padding) + " is more than half the kernel " + std::to_string(w.kernel);
  return "";
}

// Output extent along one axis; meaningful when pool_input_error() is "".
LS_HD int64_t pool_output_extent(int64_t in, const PoolWindow& w) {
  return (in + 2 * w.padding - w.kernel) / w.stride + 1;
}

// Why an in_h x in_w image does not fit `w` (valid itself), or "".
inline std::string pool_input_error(int64_t in_h, int64_t in_w, const PoolWindow& w) {
  if (in_h < 1 || in_w < 1) return "the image " + std::to_string(in_h) + "x" + std::to_string(in_w) + " is empty";
  if (in_h + 2 * w.padding < w.kernel || in_w + 2 * w.padding < w.kernel)
    return "the padded image " + std::to_string(in_h + 2 * w.padding) + "x" + std::to_string(in_w + 2 * w.padding) +
           " is smaller than the kernel " + std::to_string(w.kernel);
  return "";
}

// The window error, else the input error, else "".
inline std::string pool_error(int64_t in_h, int64_t in_w, const PoolWindow& w) {
  std::string e = pool_window_error(w);
  return e.empty() ? pool_input_error(in_h, in_w, w) : e;
}

// Requires pool_error(in_h, in_w, w) == "".
inline PoolGeometry pool_geometry(int64_t planes, int64_t in_h, int64_t in_w, const PoolWindow& w) {
  return {planes, in_h, in_w, pool_output_extent(in_h, w), pool_output_extent(in_w, w), w};
}

// The input positions [begin, end) that output position `o` covers along one
// axis, clipped to the image (the padding holds no elements).
struct PoolSpan {
  int64_t begin, end;
};
LS_HD PoolSpan pool_span(int64_t o, int64_t in, const PoolWindow& w) {
  int64_t begin = o * w.stride - w.padding;
  int64_t end = begin + w.kernel;
  return {begin < 0 ? 0 : begin, end > in ? in : end};
}

// Adaptive average pooling (PyTorch's AdaptiveAvgPool2d): output position
// `o` of `out` averages input positions floor(o * in / out) ..
// ceil((o + 1) * in / out) - 1 along one axis. The spans cover every input,
// overlap when `out` does not divide `in`, and repeat inputs when out > in.
LS_HD PoolSpan adaptive_pool_span(int64_t o, int64_t in, int64_t out) {
  return {o * in / out, ((o + 1) * in + out - 1) / out};
}

// Max pooling's comparison: a larger value wins, an earlier one wins ties, and
// the first NaN wins over everything so that a NaN input shows in the output.
LS_HD bool pool_max_takes(float value, float best) {
  return value > best || (value != value && best == best);
}

}  // namespace lockstep
