#include "data/cache_format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <utility>

#include "data/image_folder.h"

namespace lockstep::data {
namespace fs = std::filesystem;
using nlohmann::json;

namespace cache_format {

uint32_t crc(const uint8_t* data, size_t size) {
  uLong value = crc32(0L, Z_NULL, 0);
  // zlib takes an unsigned int length: feed a large block in pieces.
  while (size > 0) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    value = crc32(value, data, piece);
    data += piece;
    size -= piece;
  }
  return static_cast<uint32_t>(value);
}

void put_u32(uint8_t* at, uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* at, uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | at[i];
  return v;
}
uint64_t get_u64(const uint8_t* at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | at[i];
  return v;
}

uint64_t round_up(uint64_t value, uint64_t align) { return (value + align - 1) / align * align; }

json text_json(const std::string& text) {
  try {
    (void)json(text).dump();
    return text;
  } catch (const json::type_error&) {
    static const char* digits = "0123456789abcdef";
    std::string hex;
    for (unsigned char c : text) hex += {digits[c >> 4], digits[c & 15]};
    return json{{"hex", hex}};
  }
}

std::string json_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  const std::string hex = j.at("hex").get<std::string>();
  std::string text;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) text += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return text;
}

std::vector<uint8_t> encode_header(const Header& h) {
  std::vector<uint8_t> out(kHeaderBytes, 0);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put_u32(&out[16], h.version);
  put_u64(&out[24], h.file_size);
  const Section* sections[] = {&h.metadata, &h.labels, &h.sums};
  for (int i = 0; i < 3; ++i) {
    put_u64(&out[32 + 24 * i], sections[i]->offset);
    put_u64(&out[40 + 24 * i], sections[i]->size);
    put_u32(&out[48 + 24 * i], sections[i]->crc);
  }
  put_u64(&out[104], h.pixels_offset);
  put_u64(&out[112], h.pixels_size);
  put_u64(&out[120], h.sample_bytes);
  put_u32(&out[20], crc(out.data(), out.size()));
  return out;
}

std::string errno_text() { return std::strerror(errno); }

namespace {

bool hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

// Every image file the folder loader could list under `dir` (in a sub-folder,
// at any depth, links followed, hidden entries left out), by path relative to
// `root`. A link leading back to a folder on its own path is not followed
// again: the loader refuses such a loop when it opens the folder.
void walk(const fs::path& root, const fs::path& dir, std::vector<std::pair<dev_t, ino_t>>& ancestors,
          std::map<std::string, FileStamp>& out) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::path& path = it->path();
    if (hidden(path)) continue;
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) continue;
    if (S_ISDIR(info.st_mode)) {
      const std::pair<dev_t, ino_t> id{info.st_dev, info.st_ino};
      if (std::find(ancestors.begin(), ancestors.end(), id) != ancestors.end()) continue;
      ancestors.push_back(id);
      walk(root, path, ancestors, out);
      ancestors.pop_back();
    } else if (S_ISREG(info.st_mode) && dir != root && is_image_file_name(path.filename().string())) {
      out[path.lexically_relative(root).string()] =
          FileStamp{static_cast<uint64_t>(info.st_size),
                    static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
    }
  }
}

}  // namespace

std::map<std::string, FileStamp> list_folder(const std::string& root) {
  std::map<std::string, FileStamp> out;
  std::vector<std::pair<dev_t, ino_t>> ancestors;
  struct stat info {};
  if (::stat(root.c_str(), &info) == 0) ancestors.push_back({info.st_dev, info.st_ino});
  walk(fs::path(root), fs::path(root), ancestors, out);
  return out;
}

std::string absolute_folder(const std::string& folder) {
  fs::path p = fs::absolute(folder).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.string();
}

json options_json(const DataOptions& o) {
  return json{{"channels", o.channels},
              {"height", o.height},
              {"width", o.width},
              {"train_center_crop", o.train_center_crop},
              {"test_center_crop", o.test_center_crop},
              {"max_image_pixels", o.max_image_pixels},
              {"skip_bad_images", o.skip_bad_images},
              {"test_fraction", o.test_fraction},
              {"split_seed", o.split_seed}};
}

std::string input_text(int64_t c, int64_t h, int64_t w) {
  return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace cache_format

using namespace cache_format;

std::string default_cache_path(const std::string& folder) { return absolute_folder(folder) + kCacheFileSuffix; }

std::string cache_command(const std::string& folder, const DataOptions& o, bool split, const std::string& output) {
  std::ostringstream out;
  out << "lockstep cache " << folder << " --input " << input_text(o.channels, o.height, o.width);
  if (o.train_center_crop != 0.0 || o.test_center_crop != 0.0) out << " --augment random-resized-crop";
  if (split) out << " --test-fraction " << number(o.test_fraction) << " --seed " << o.split_seed;
  if (o.skip_bad_images) out << " --skip-bad-images";
  if (o.max_image_pixels != kDefaultMaxImagePixels) out << " --max-image-pixels " << o.max_image_pixels;
  if (!output.empty() && output != default_cache_path(folder)) out << " -o " << output;
  return out.str();
}

bool is_cache_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO swapped in is not waited on
  if (fd < 0) return false;
  char head[sizeof kMagic] = {};
  const ssize_t got = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  return got >= 0 && std::memcmp(head, kMagic, static_cast<size_t>(got)) == 0;
}

}  // namespace lockstep::data
