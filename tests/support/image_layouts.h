#pragma once
// Images moved between NCHW and NHWC by plain loops of the tests' own, to
// hold the library's channels-last paths against its NCHW ones: each of `n`
// samples is [channels, spatial] (planes) one way, [spatial, channels] (rows)
// the other.
#include <cstdint>
#include <vector>

namespace lockstep::testing {

inline std::vector<float> moved_images(const std::vector<float>& v, int64_t n, int64_t channels, int64_t spatial,
                                       bool to_nhwc) {
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < spatial; ++s) {
        const int64_t plane = (i * channels + c) * spatial + s, row = (i * spatial + s) * channels + c;
        if (to_nhwc)
          out[row] = v[plane];
        else
          out[plane] = v[row];
      }
  return out;
}

inline std::vector<float> to_nhwc(const std::vector<float>& v, int64_t n, int64_t channels, int64_t spatial) {
  return moved_images(v, n, channels, spatial, true);
}
inline std::vector<float> to_nchw(const std::vector<float>& v, int64_t n, int64_t channels, int64_t spatial) {
  return moved_images(v, n, channels, spatial, false);
}

}  // namespace lockstep::testing
