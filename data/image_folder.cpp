#include "data/image_folder.h"

#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <climits>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "data/file_bytes.h"
#include "data/image_resize.h"
#include "data/jpeg_decode.h"
#include "base/error.h"
#include "base/regular_file.h"
#include "kernels/augment_math.h"

namespace lockstep::data {
namespace fs = std::filesystem;

namespace {

bool is_hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

std::string failure_reason() {
  const char* reason = stbi_failure_reason();  // thread-local in stb_image
  return reason ? reason : "unknown reason";
}

bool is_zero_byte(const std::string& path) {
  std::error_code ec;
  return fs::file_size(path, ec) == 0 && !ec;
}

// A folder's identity, whatever path (and links) lead to it.
struct FolderId {
  dev_t device;
  ino_t inode;
  bool operator==(const FolderId&) const = default;
};

std::optional<FolderId> folder_id(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return std::nullopt;
  return FolderId{info.st_dev, info.st_ino};
}

// Appends the images under `dir` at any depth (as torchvision walks it),
// following links to folders but refusing a link that leads back to a folder
// on its own path (`ancestors`): a loop would list images without end.
void walk_images(const fs::path& dir, std::vector<FolderId>& ancestors, std::vector<std::string>& images) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  LS_CHECK(!ec, "image folder: cannot read folder ", dir.string(), " (", ec.message(), ")");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    LS_CHECK(!ec, "image folder: cannot read inside ", dir.string(), " (", ec.message(), ")");
    const fs::path& path = it->path();
    if (is_hidden(path)) continue;
    if (const std::optional<FolderId> id = folder_id(path)) {
      const auto loop = std::find(ancestors.begin(), ancestors.end(), *id);
      if (loop != ancestors.end()) {
        fs::path target = path;
        for (auto up = ancestors.end(); up != loop; --up) target = target.parent_path();
        LS_FAIL("image folder: the link ", path.string(), " leads back to ", target.string(),
                ", a folder that contains it (a loop); remove or replace the link");
      }
      ancestors.push_back(*id);
      walk_images(path, ancestors, images);
      ancestors.pop_back();
    } else if (is_image_file_name(path.filename().string())) {
      // Whatever its kind (a dangling link, a device, a FIFO): check_header
      // tells it, so no image-named entry is left out without a word.
      images.push_back(path.string());
    }
  }
}

// The images under one class folder of `root`, skipping hidden entries;
// sorted so the order is the same on every file system.
std::vector<std::string> list_images(const fs::path& root, const fs::path& class_dir) {
  std::vector<FolderId> ancestors;
  for (const fs::path& folder : {root, class_dir}) {
    const std::optional<FolderId> id = folder_id(folder);
    LS_CHECK(id.has_value(), "image folder: cannot read class folder ", class_dir.string());
    LS_CHECK(ancestors.empty() || ancestors.back() != *id, "image folder: the link ", class_dir.string(),
             " leads back to ", root.string(), ", the folder that contains it (a loop); remove or replace the link");
    ancestors.push_back(*id);
  }
  std::vector<std::string> images;
  walk_images(class_dir, ancestors, images);
  std::sort(images.begin(), images.end());
  return images;
}

// Empty when the image's header is readable; otherwise why not, naming the
// file. stb_image reads only the start of the file; a JPEG that it refuses
// (arithmetic coding, 12 bits) is read whole and asked of libjpeg-turbo.
std::string check_header(const std::string& path, int64_t max_pixels) {
  // The kind first: stb_image would block on a FIFO and read /dev/zero without end.
  const std::string not_a_file = not_a_file_reason(path);
  if (!not_a_file.empty()) return "image " + path + " " + not_a_file;
  if (is_zero_byte(path)) return "zero-byte image " + path;
  int w = 0, h = 0, n = 0;
  if (stbi_info(path.c_str(), &w, &h, &n)) return pixel_limit_problem(path, w, h, max_pixels);
  const std::string reason = failure_reason();
  std::vector<uint8_t> bytes;
  read_plain_file(path, bytes, "image");
  if (!is_jpeg(bytes.data(), bytes.size())) return "cannot decode image " + path + " (" + reason + ")";
  const std::string problem = jpeg_header_problem(bytes.data(), bytes.size());
  if (!problem.empty()) return "cannot decode image " + path + " (" + problem + ")";
  const auto size = jpeg_declared_size(bytes.data(), bytes.size());
  return size ? pixel_limit_problem(path, size->first, size->second, max_pixels) : "";
}

// The image's declared width and height, from its header, before anything is decoded.
std::optional<std::pair<int64_t, int64_t>> declared_size(const std::vector<uint8_t>& bytes) {
  if (is_jpeg(bytes.data(), bytes.size())) return jpeg_declared_size(bytes.data(), bytes.size());
  int w = 0, h = 0, n = 0;
  if (!stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n)) return std::nullopt;
  return std::pair<int64_t, int64_t>{w, h};
}

// The centred window of an image_height x image_width image with the
// target's aspect ratio whose shorter side (relative to the target's) is
// `fraction` of the image's: torchvision's Resize(size / fraction) followed by
// CenterCrop(size), in the image's own pixels.
struct CropWindow {
  double height = 0.0, width = 0.0;
};
CropWindow center_window(double image_height, double image_width, int64_t height, int64_t width, double fraction) {
  const double aspect = double(width) / double(height);
  if (image_width >= image_height * aspect) return {image_height * fraction, image_height * fraction * aspect};
  return {image_width * fraction / aspect, image_width * fraction};
}

}  // namespace

std::string pixel_limit_problem(const std::string& path, int64_t width, int64_t height, int64_t max_pixels) {
  const int64_t pixels = width * height;  // each below 2^31: no overflow
  if (pixels <= max_pixels) return "";
  return "image " + path + " declares " + std::to_string(width) + "x" + std::to_string(height) + " = " +
         std::to_string(pixels) + " pixels, more than the limit of " + std::to_string(max_pixels) +
         " (the max_image_pixels setting, lockstep's --max-image-pixels; raise it to read larger images)";
}

bool is_image_file_name(const std::string& name) {
  std::string ext = fs::path(name).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp" || ext == ".gif";
}

void decode_image(const std::string& path, int64_t channels, int64_t height, int64_t width, uint8_t* out,
                  int64_t max_pixels, double center_crop) {
  LS_CHECK(channels == 1 || channels == 3, "decode_image ", path, ": channels must be 1 (grey) or 3 (RGB), not ",
           channels);
  LS_CHECK(height > 0 && width > 0, "decode_image ", path, ": target size ", height, "x", width);
  LS_CHECK(center_crop >= 0.0 && center_crop <= 1.0, "decode_image ", path, ": centre crop ", center_crop,
           " outside [0, 1]");
  const int c = static_cast<int>(channels);
  thread_local std::vector<uint8_t> bytes;
  read_plain_file(path, bytes, "image");
  LS_CHECK(!bytes.empty(), "zero-byte image ", path);
  LS_CHECK(bytes.size() <= INT_MAX, "image ", path, ": ", bytes.size(), " bytes, more than an image file may hold (2 GiB)");
  const auto size = declared_size(bytes);
  if (size) {
    const std::string problem = pixel_limit_problem(path, size->first, size->second, max_pixels);
    LS_CHECK(problem.empty(), problem);
  }
  // A centre crop needs its window, not the whole image, at the target size:
  // the JPEG is decoded at a scale that keeps the window that large.
  int64_t decode_height = height, decode_width = width;
  if (center_crop > 0.0 && size) {
    const CropWindow window = center_window(size->second, size->first, height, width, center_crop);
    decode_height = static_cast<int64_t>(std::ceil(double(height) * double(size->second) / window.height));
    decode_width = static_cast<int64_t>(std::ceil(double(width) * double(size->first) / window.width));
  }
  thread_local std::vector<uint8_t> jpeg_pixels;
  std::optional<JpegDecoded> jpeg;
  if (is_jpeg(bytes.data(), bytes.size()))
    jpeg = decode_jpeg(path, bytes.data(), bytes.size(), channels, decode_height, decode_width, jpeg_pixels);
  std::unique_ptr<stbi_uc, void (*)(void*)> stb_pixels(nullptr, stbi_image_free);
  PixelsHWC image{nullptr, 0, 0, channels, 0};
  if (jpeg) {
    image.data = jpeg_pixels.data();
    image.height = jpeg->height;
    image.width = jpeg->width;
    image.content_height = jpeg->full_height * jpeg->scale.num;
    image.content_width = jpeg->full_width * jpeg->scale.num;
    image.content_denom = jpeg->scale.denom;
  } else {
    int w = 0, h = 0, n = 0;
    stb_pixels.reset(stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n, c));
    LS_CHECK(stb_pixels != nullptr, "cannot decode image ", path, " (", failure_reason(), ")");
    image = PixelsHWC{stb_pixels.get(), h, w, channels, 0};
  }
  image.stride = image.width * channels;
  if (center_crop > 0.0) {
    // The window in decoded pixels (the content may be a fraction of a pixel
    // short of the decoded size), whole pixels, centred.
    const double content_height = image.content_height ? double(image.content_height) / double(image.content_denom)
                                                       : double(image.height);
    const double content_width = image.content_width ? double(image.content_width) / double(image.content_denom)
                                                     : double(image.width);
    const CropWindow window = center_window(content_height, content_width, height, width, center_crop);
    const auto whole = [](double length, int64_t limit) {
      return std::clamp<int64_t>(static_cast<int64_t>(std::llround(length)), 1, limit);
    };
    const int64_t crop_height = whole(window.height, image.height), crop_width = whole(window.width, image.width);
    const int64_t top = std::clamp<int64_t>(std::llround((content_height - double(crop_height)) / 2.0), 0,
                                            image.height - crop_height);
    const int64_t left = std::clamp<int64_t>(std::llround((content_width - double(crop_width)) / 2.0), 0,
                                             image.width - crop_width);
    image.data += top * image.stride + left * channels;
    image.height = crop_height;
    image.width = crop_width;
    image.content_height = image.content_width = 0;
    image.content_denom = 1;
  }
  // The content is at least the target size whenever the JPEG was scaled down.
  if (image.width >= width && image.height >= height) {
    shrink_area(image, height, width, out);
    return;
  }
  // Enlarging interpolates (Catmull-Rom, stb's default), and an axis that
  // shrinks meanwhile averages (box); stb's triangle filter is avoided: its
  // version in Debian asserts (aborts) on many ratios, e.g. 197 -> 127.
  const size_t plane = static_cast<size_t>(height * width);
  std::vector<uint8_t> resized(plane * c);
  auto filter = [](int64_t from, int64_t to) { return to < from ? STBIR_FILTER_BOX : STBIR_FILTER_CATMULLROM; };
  const int ok =
      stbir_resize(image.data, static_cast<int>(image.width), static_cast<int>(image.height),
                   static_cast<int>(image.stride), resized.data(),
                   static_cast<int>(width), static_cast<int>(height), 0, STBIR_TYPE_UINT8, c, STBIR_ALPHA_CHANNEL_NONE,
                   0, STBIR_EDGE_CLAMP, STBIR_EDGE_CLAMP, filter(image.width, width), filter(image.height, height),
                   STBIR_COLORSPACE_LINEAR, nullptr);
  LS_CHECK(ok, "image ", path, ": resizing ", image.width, "x", image.height, " to ", width, "x", height, " failed");
  for (size_t p = 0; p < plane; ++p)
    for (int ch = 0; ch < c; ++ch) out[ch * plane + p] = resized[p * c + ch];
}

void load_image(const std::string& path, int64_t channels, int64_t height, int64_t width, float* out,
                int64_t max_pixels, double center_crop) {
  std::vector<uint8_t> bytes(static_cast<size_t>(Shape{channels, height, width}.numel()));
  decode_image(path, channels, height, width, bytes.data(), max_pixels, center_crop);
  for (size_t i = 0; i < bytes.size(); ++i) out[i] = pixel_value(bytes[i]);
}

ImageFolder::ImageFolder(const std::string& root, ImageFolderOptions options)
    : root_(root), options_(std::move(options)) {
  LS_CHECK(options_.channels == 1 || options_.channels == 3, "image folder ", root_,
           ": channels must be 1 (grey) or 3 (RGB), not ", options_.channels);
  LS_CHECK(options_.height > 0 && options_.width > 0, "image folder ", root_, ": the target size ", options_.height,
           "x", options_.width, " must be positive");
  LS_CHECK(options_.center_crop >= 0.0 && options_.center_crop <= 1.0, "image folder ", root_, ": centre crop ",
           options_.center_crop, " outside [0, 1]");
  std::error_code ec;
  const fs::file_status status = fs::status(root_, ec);
  LS_CHECK(fs::exists(status), "image folder ", root_, ": no such folder", ec ? " (" + ec.message() + ")" : "");
  LS_CHECK(fs::is_directory(status), "image folder ", root_, ": not a folder");

  std::vector<std::string> class_dirs;
  bool loose_images = false;
  fs::directory_iterator it(root_, ec);
  LS_CHECK(!ec, "image folder ", root_, ": cannot read (", ec.message(), ")");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    LS_CHECK(!ec, "image folder ", root_, ": cannot read (", ec.message(), ")");
    if (is_hidden(it->path())) continue;
    if (it->is_directory(ec))
      class_dirs.push_back(it->path().filename().string());
    else if (is_image_file_name(it->path().filename().string()))
      loose_images = true;
  }
  std::sort(class_dirs.begin(), class_dirs.end());
  LS_CHECK(!class_dirs.empty(), "image folder ", root_, ": no class sub-folders (expected one sub-folder per class, ",
           "e.g. ", (fs::path(root_) / "cat" / "001.jpg").string(), ")",
           loose_images ? "; its images lie directly in it" : "");

  class_names_ = options_.classes.empty() ? class_dirs : options_.classes;
  for (const std::string& name : class_dirs) {
    auto pos = std::find(class_names_.begin(), class_names_.end(), name);
    LS_CHECK(pos != class_names_.end(), "image folder ", root_, ": class folder '", name,
             "' is not one of the ", class_names_.size(), " training classes");
    const int32_t label = static_cast<int32_t>(pos - class_names_.begin());
    const fs::path class_dir = fs::path(root_) / name;
    const std::vector<std::string> images = list_images(root_, class_dir);
    LS_CHECK(!images.empty(), "empty class folder ", class_dir.string(),
             ": it holds no images (.jpg, .jpeg, .png, .bmp, .gif)");
    for (const std::string& image : images) {
      const std::string problem = check_header(image, options_.max_pixels);
      if (!problem.empty()) {
        LS_CHECK(options_.skip_bad_images, problem);
        skipped_.add(image, problem);
        continue;
      }
      files_.push_back(image);
      labels_.push_back(label);
    }
  }
  LS_CHECK(!files_.empty(), "image folder ", root_, ": no readable image (", skipped_.summary(), ")");
  if (options_.cache) keep_decoded();
}

void ImageFolder::keep_decoded() {
  if (cache_state_) return;
  cache_.resize(files_.size() * static_cast<size_t>(sample_shape().numel()));
  cache_state_ = std::make_unique<std::atomic<uint8_t>[]>(files_.size());
}

void ImageFolder::read_pixels(int64_t index, uint8_t* out) const {
  const int64_t n = sample_shape().numel();
  auto decode_into = [&](uint8_t* to) {
    decode_image(files_[index], options_.channels, options_.height, options_.width, to, options_.max_pixels,
                 options_.center_crop);
  };
  if (!cache_state_) {
    decode_into(out);
    return;
  }
  uint8_t* slot = cache_.data() + static_cast<size_t>(index) * static_cast<size_t>(n);
  std::atomic<uint8_t>& state = cache_state_[index];
  if (state.load(std::memory_order_acquire) == 2) {
    std::memcpy(out, slot, static_cast<size_t>(n));
    return;
  }
  // Whoever claims the slot fills it; a reader that loses the race decodes for itself.
  uint8_t expected = 0;
  if (state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    try {
      decode_into(slot);
    } catch (...) {
      state.store(0, std::memory_order_release);
      throw;
    }
    state.store(2, std::memory_order_release);
    std::memcpy(out, slot, static_cast<size_t>(n));
    return;
  }
  decode_into(out);
}

}  // namespace lockstep::data
