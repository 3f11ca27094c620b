#pragma once
// An image folder in PyTorch's ImageFolder layout: ROOT/<class>/<image>, one
// sub-folder per class, class names (and so labels) from the sorted sub-folder
// names. Images are decoded on demand, straight to grey or RGB (JPEG with
// libjpeg-turbo at the smallest DCT scale that still covers the input size;
// PNG, BMP and GIF with stb_image), then shrunk by area averaging or enlarged
// by stb's resizer to the model's input size; hidden entries and files of
// other types are ignored.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace lockstep::data {

// The most pixels (width x height, as the file declares them) an image may
// have before it is decoded: PIL's limit, about 179 M (a 13,377 x 13,377
// image). A small file can declare billions; such a "decompression bomb" is
// refused by its header. Raise max_pixels for larger genuine images.
inline constexpr int64_t kDefaultMaxImagePixels = 178956970;

struct ImageFolderOptions {
  int64_t channels = 3;  // 1: grey, 3: RGB
  int64_t height = 32;   // every image is resized to height x width
  int64_t width = 32;
  // Keep each image decoded (uint8, at the target size) after its first read.
  bool cache = false;
  // Leave out zero-byte and undecodable files, listed in skipped(), instead of throwing.
  bool skip_bad_images = false;
  // When not empty, label by this list (a test folder uses its training folder's
  // classes); every sub-folder must then be one of them.
  std::vector<std::string> classes;
  // Images declaring more pixels are refused (or skipped, with skip_bad_images).
  int64_t max_pixels = kDefaultMaxImagePixels;
  // 0: each image is stretched to height x width. A fraction f in (0, 1]:
  // its aspect ratio is kept and the centred window covering f of its
  // shorter side is taken (torchvision's Resize(size / f) then
  // CenterCrop(size); ImageNet evaluation uses 0.875, 224 of 256).
  double center_crop = 0.0;
};

class ImageFolder final : public Dataset {
public:
  // Scans `root` and checks every image's header. Throws lockstep::Error naming
  // the path for an unreadable folder, a folder without class sub-folders, an
  // empty class folder, and (unless skip_bad_images) a zero-byte or
  // undecodable image.
  ImageFolder(const std::string& root, ImageFolderOptions options);

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Shape sample_shape() const override { return Shape{options_.channels, options_.height, options_.width}; }
  int64_t num_classes() const override { return static_cast<int64_t>(class_names_.size()); }
  const std::vector<std::string>& class_names() const override { return class_names_; }
  int32_t label(int64_t index) const override { return labels_[index]; }
  // Decodes (or takes from the cache) and resizes; throws naming the file when
  // the image cannot be decoded.
  void read_pixels(int64_t index, uint8_t* out) const override;
  std::string source() const override { return "image folder " + root_; }
  std::string sample_name(int64_t index) const override { return files_[index]; }

  const std::string& file(int64_t index) const { return files_[index]; }
  // Bytes the decoded samples take (uint8, at the target size): what keeping them needs.
  int64_t decoded_bytes() const { return size() * sample_shape().numel(); }
  // From now on each image is decoded once and kept (as the cache option
  // does); call before the folder is shared between threads.
  void keep_decoded();
  const BadFiles& skipped() const { return skipped_; }

private:
  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> class_names_;
  std::vector<std::string> files_;
  std::vector<int32_t> labels_;
  BadFiles skipped_;
  // Cache: per image 0 = empty, 1 = being written, 2 = ready.
  mutable std::vector<uint8_t> cache_;
  mutable std::unique_ptr<std::atomic<uint8_t>[]> cache_state_;
};

// True for names ending in .jpg, .jpeg, .png, .bmp or .gif (any case).
bool is_image_file_name(const std::string& name);

// Decodes the image at `path`, converts it to `channels` (1 grey, 3 RGB) and
// resizes it to height x width: channel-major bytes in `out`. Throws
// lockstep::Error naming the file when it is empty, not a regular file,
// cannot be decoded, (JPEG) is cut short, or declares more than `max_pixels`
// pixels (checked from its header, before decoding).
// center_crop as ImageFolderOptions::center_crop.
void decode_image(const std::string& path, int64_t channels, int64_t height, int64_t width, uint8_t* out,
                  int64_t max_pixels = kDefaultMaxImagePixels, double center_crop = 0.0);
// The same as floats in [0, 1] (what `lockstep predict` feeds a model).
void load_image(const std::string& path, int64_t channels, int64_t height, int64_t width, float* out,
                int64_t max_pixels = kDefaultMaxImagePixels, double center_crop = 0.0);

// Empty when a width x height image is within `max_pixels`; otherwise the
// message that refuses `path`, naming its size and the setting.
std::string pixel_limit_problem(const std::string& path, int64_t width, int64_t height, int64_t max_pixels);

}  // namespace lockstep::data
