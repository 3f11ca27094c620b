#include "data/jpeg_decode.h"

#include <turbojpeg.h>

#include "base/error.h"

namespace lockstep::data {
namespace {

// A handle must not be shared between threads: one per thread, reused. After
// a failure it is made anew (cheap, well under a microsecond):
// libjpeg-turbo 2.1's tjDecompressHeader3 returns from an error without
// aborting, and the handle then fails every later image (seen with Debian's
// 2.1.5; the test of a cut-short JPEG checks it).
class JpegDecompressor {
public:
  JpegDecompressor() : handle_(tjInitDecompress()) {}
  ~JpegDecompressor() {
    if (handle_) tjDestroy(handle_);
  }
  JpegDecompressor(const JpegDecompressor&) = delete;
  JpegDecompressor& operator=(const JpegDecompressor&) = delete;
  tjhandle get() const {
    LS_CHECK(handle_ != nullptr, "libjpeg-turbo: cannot make a decompressor (", tjGetErrorStr2(nullptr), ")");
    return handle_;
  }
  // libjpeg-turbo's message for the last failure, and a fresh handle for the next image.
  std::string fail() {
    std::string message = tjGetErrorStr2(handle_);
    tjDestroy(handle_);
    handle_ = tjInitDecompress();
    return message;
  }

private:
  tjhandle handle_;
};

JpegDecompressor& thread_decompressor() {
  thread_local JpegDecompressor decompressor;
  return decompressor;
}

// After a warning libjpeg-turbo has finished the image and returns -1 all
// the same; only a fatal error, or the data running out (which it papers
// over with grey), makes the image unusable. PIL draws the same line.
bool failed(tjhandle tj) {
  if (tjGetErrorCode(tj) == TJERR_FATAL) return true;
  return std::string(tjGetErrorStr2(tj)).find("Premature end") != std::string::npos;
}

struct Header {
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
};

// False, with libjpeg-turbo's reason in `problem`, when the header is unusable.
bool read_header(JpegDecompressor& decompressor, const uint8_t* bytes, size_t size, Header& header,
                 std::string& problem) {
  const int status = tjDecompressHeader3(decompressor.get(), bytes, static_cast<unsigned long>(size), &header.width,
                                         &header.height, &header.subsampling, &header.colorspace);
  const bool sized = header.width > 0 && header.height > 0;
  if (status == 0 && sized) return true;
  const bool usable = status != 0 && !failed(decompressor.get()) && sized;
  problem = decompressor.fail();
  return usable;
}

}  // namespace

bool is_jpeg(const uint8_t* bytes, size_t size) {
  return size >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

JpegScale jpeg_scale_for(int64_t height, int64_t width, int64_t target_height, int64_t target_width) {
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  const int64_t w = width, h = height;
  tjscalingfactor best{1, 1};
  for (int i = 0; factors != nullptr && i < count; ++i) {
    const tjscalingfactor f = factors[i];
    const bool smaller = f.num * best.denom < best.num * f.denom;
    const bool covers = int64_t{w} * f.num >= target_width * f.denom && int64_t{h} * f.num >= target_height * f.denom;
    if (smaller && covers) best = f;
  }
  return {best.num, best.denom};
}

std::string jpeg_header_problem(const uint8_t* bytes, size_t size) {
  Header header;
  std::string problem;
  return read_header(thread_decompressor(), bytes, size, header, problem) ? "" : problem;
}

std::optional<std::pair<int64_t, int64_t>> jpeg_declared_size(const uint8_t* bytes, size_t size) {
  Header header;
  std::string problem;
  if (!read_header(thread_decompressor(), bytes, size, header, problem)) return std::nullopt;
  return std::pair<int64_t, int64_t>{header.width, header.height};
}

std::optional<JpegDecoded> decode_jpeg(const std::string& path, const uint8_t* bytes, size_t size, int64_t channels,
                                       int64_t target_height, int64_t target_width, std::vector<uint8_t>& pixels) {
  LS_CHECK(channels == 1 || channels == 3, "decode_jpeg ", path, ": channels must be 1 (grey) or 3 (RGB), not ",
           channels);
  JpegDecompressor& decompressor = thread_decompressor();
  Header header;
  std::string problem;
  LS_CHECK(read_header(decompressor, bytes, size, header, problem), "cannot decode image ", path, " (", problem, ")");
  if (header.colorspace == TJCS_CMYK || header.colorspace == TJCS_YCCK) return std::nullopt;
  const JpegScale scale = jpeg_scale_for(header.height, header.width, target_height, target_width);
  const tjscalingfactor factor{scale.num, scale.denom};
  const int w = TJSCALED(header.width, factor), h = TJSCALED(header.height, factor);
  const int c = static_cast<int>(channels);
  pixels.resize(static_cast<size_t>(w) * static_cast<size_t>(h) * static_cast<size_t>(c));
  // Asked for exactly the scaled size, TurboJPEG picks that scale; the default
  // (accurate) DCT and fancy upsampling, as PIL decodes.
  tjhandle tj = decompressor.get();
  if (tjDecompress2(tj, bytes, static_cast<unsigned long>(size), pixels.data(), w, w * c, h,
                    c == 1 ? TJPF_GRAY : TJPF_RGB, 0) != 0) {
    const bool fatal = failed(tj);
    const std::string message = decompressor.fail();
    LS_CHECK(!fatal, "cannot decode image ", path, " (", message, ")");
  }
  return JpegDecoded{w, h, header.width, header.height, scale};
}

}  // namespace lockstep::data
