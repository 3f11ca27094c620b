// libFuzzer: image decoding (JPEG with libjpeg-turbo; PNG, BMP, GIF with
// stb_image), the pixel limit, and the resize to a small and a larger size.
#include <vector>

#include "base/error.h"
#include "data/image_folder.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = lockstep_fuzz::input_file(data, size, ".img");
  std::vector<uint8_t> out(3 * 40 * 40);
  for (int64_t channels : {1, 3})
    for (int64_t side : {8, 40}) {
      try {
        // A limit of 4 M pixels keeps each run small; the default is tested elsewhere.
        lockstep::data::decode_image(path, channels, side, side, out.data(), 4 << 20);
      } catch (const lockstep::Error&) {
      }
    }
  return 0;
}
