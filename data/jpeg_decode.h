#pragma once
// JPEG decoding with libjpeg-turbo's TurboJPEG API, at a reduced DCT scale:
// the inverse DCT produces the image at M/8 of its size directly (what PIL's
// draft mode does with 1/2, 1/4 and 1/8), so a photo bound for 32x32 is
// never decoded at full size. One decompressor per thread.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::data {

// True when `bytes` start with a JPEG's SOI marker (FF D8 FF), whatever the file name says.
bool is_jpeg(const uint8_t* bytes, size_t size);

struct JpegScale {
  int num = 1, denom = 1;
  bool operator==(const JpegScale&) const = default;
};

// The smallest of libjpeg-turbo's scales (M/8, never above 1) at which a
// height x width image's content (W*M/8, not rounded up) is still at least
// target_height x target_width; 1/1 when the image is smaller than the target.
JpegScale jpeg_scale_for(int64_t height, int64_t width, int64_t target_height, int64_t target_width);

// Empty when libjpeg-turbo can read the header (warnings allowed); otherwise its reason.
std::string jpeg_header_problem(const uint8_t* bytes, size_t size);

// What decode_jpeg produced: width x height pixels, the JPEG's full_width x
// full_height at `scale`, rounded up; the last row and column may be partly
// padding (the content spans full_width * scale.num / scale.denom pixels).
struct JpegDecoded {
  int64_t width = 0, height = 0, full_width = 0, full_height = 0;
  JpegScale scale;
};

// Decodes a JPEG at jpeg_scale_for(...) of its size into `pixels`
// (interleaved rows of `channels`: 1 grey or 3 RGB; its capacity is reused).
// Returns nothing, decoding nothing, for a CMYK JPEG (TurboJPEG gives CMYK
// only as CMYK). Throws lockstep::Error "cannot decode image PATH (reason)"
// when the data is undecodable or cut short; warnings after which
// libjpeg-turbo finishes the image (stray bytes between markers, a bad
// Huffman code) pass, as in PIL. Callers bound the size first (jpeg_declared_size).
std::optional<JpegDecoded> decode_jpeg(const std::string& path, const uint8_t* bytes, size_t size, int64_t channels,
                                       int64_t target_height, int64_t target_width, std::vector<uint8_t>& pixels);

// The width and height the JPEG's header declares, or nothing when it is unreadable.
std::optional<std::pair<int64_t, int64_t>> jpeg_declared_size(const uint8_t* bytes, size_t size);

}  // namespace lockstep::data
