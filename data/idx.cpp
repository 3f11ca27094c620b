#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "base/error.h"
#include "base/printable.h"

namespace lockstep::data {
namespace {

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", value);
  return text;
}

uint32_t big_endian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

IdxArray read_idx(const std::string& path, int rank, uint64_t max_bytes) {
  // Streamed: the header says how many bytes follow, and no more are inflated
  // (a gzip bomb stops at the header's size, a lie about it is an error).
  LS_CHECK(rank >= 1 && rank <= 4, "read_idx ", path, ": rank ", rank, " (1 to 4 are supported)");
  FileReader reader(path, "IDX file");
  uint8_t head[4 + 4 * 4];
  size_t got = reader.read(head, 4);
  LS_CHECK(got == 4, "IDX file ", path, ": truncated (", got, " bytes, shorter than the 4-byte magic number)");
  const uint32_t magic = big_endian32(head);
  const uint32_t expected = 0x00000800u | static_cast<uint32_t>(rank);
  LS_CHECK(magic == expected, "IDX file ", path, ": wrong magic number ", hex32(magic), " (expected ", hex32(expected),
           ": unsigned bytes in ", rank, " dimension", rank == 1 ? "" : "s", ")");
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  got = 4 + reader.read(head + 4, header - 4);
  LS_CHECK(got == header, "IDX file ", path, ": truncated header (", got, " bytes, the header is ", header, ")");
  IdxArray array;
  uint64_t payload = 1;
  bool overflow = false;
  std::string extents;
  for (int d = 0; d < rank; ++d) {
    const uint32_t extent = big_endian32(head + 4 + 4 * d);
    array.dims.push_back(extent);
    overflow = overflow || __builtin_mul_overflow(payload, uint64_t{extent}, &payload);
    extents += (d ? " x " : "") + std::to_string(extent);
  }
  LS_CHECK(!overflow && payload <= max_bytes, "IDX file ", path, ": its header announces ", extents,
           overflow ? " values, more than 2^64" : " = " + std::to_string(payload) + " values",
           ", more than the limit of ", max_bytes, " bytes for a data file");
  // Grown as the data arrives, so a short file that claims a lot allocates little.
  std::vector<uint8_t>& values = array.values;
  size_t filled = 0;
  while (filled < payload) {
    values.resize(static_cast<size_t>(std::min<uint64_t>(payload, std::max<uint64_t>(2 * filled, 1 << 20))));
    const size_t chunk = reader.read(values.data() + filled, values.size() - filled);
    filled += chunk;
    if (filled < values.size()) break;
  }
  LS_CHECK(filled == payload, "IDX file ", path, ": truncated (the header says ", extents, " = ", payload,
           " bytes, only ", filled, " follow it)");
  LS_CHECK(reader.at_end(), "IDX file ", path, ": unexpected bytes after the ", extents,
           " values its header announces (the file is longer than its header says)");
  return array;
}

std::shared_ptr<InMemoryDataset> read_idx_dataset(const std::string& images_path, const std::string& labels_path,
                                                  std::vector<std::string> class_names) {
  IdxArray images = read_idx(images_path, 3);
  IdxArray labels = read_idx(labels_path, 1);
  const int64_t count = images.dims[0];
  LS_CHECK(count == labels.dims[0], "IDX files ", images_path, " and ", labels_path, ": ", count,
           " images but ", labels.dims[0], " labels");
  LS_CHECK(count > 0, "IDX file ", images_path, ": holds no images");
  LS_CHECK(images.dims[1] > 0 && images.dims[2] > 0, "IDX file ", images_path, ": images of ", images.dims[1], "x",
           images.dims[2], " pixels");
  const int64_t classes = static_cast<int64_t>(class_names.size());
  std::vector<int32_t> label_values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int32_t label = labels.values[i];
    LS_CHECK(label < classes, "IDX file ", labels_path, ": label ", label, " of sample ", i,
             " is out of range [0, ", classes, ")");
    label_values[i] = label;
  }
  return std::make_shared<InMemoryDataset>(Shape{1, images.dims[1], images.dims[2]}, std::move(images.values),
                                           std::move(label_values), std::move(class_names), "IDX " + images_path);
}

std::optional<IdxFiles> find_idx_files(const std::string& dir) {
  namespace fs = std::filesystem;
  auto find = [&](const std::string& prefix, const std::string& kind, const std::string& idx) -> std::string {
    for (const std::string& base : {prefix + "-" + kind + "-" + idx + "-ubyte", prefix + "-" + kind + "." + idx + "-ubyte"})
      for (const char* suffix : {"", ".gz"}) {
        const std::string path = (fs::path(dir) / (base + suffix)).string();
        if (is_file(path)) return path;
      }
    return "";
  };
  IdxFiles files{find("train", "images", "idx3"), find("train", "labels", "idx1"), find("t10k", "images", "idx3"),
                 find("t10k", "labels", "idx1")};
  if (files.train_images.empty()) return std::nullopt;
  const std::pair<const std::string*, const char*> needed[] = {{&files.train_labels, "train-labels-idx1-ubyte"},
                                                              {&files.test_images, "t10k-images-idx3-ubyte"},
                                                              {&files.test_labels, "t10k-labels-idx1-ubyte"}};
  for (const auto& [path, name] : needed)
    LS_CHECK(!path->empty(), "IDX folder ", dir, ": has ", files.train_images, " but no ", name, "[.gz]");
  return files;
}

namespace {

// classes.txt's names, one a line.
std::vector<std::string> listed_class_names(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path, "class names file", 1 << 24);
  std::string text(bytes.begin(), bytes.end());
  if (!text.empty() && text.back() == '\n') text.pop_back();
  std::vector<std::string> names;
  std::set<std::string> seen;
  size_t start = 0;
  for (int64_t line = 1; start <= text.size(); ++line) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string name = text.substr(start, end - start);
    if (!name.empty() && name.back() == '\r') name.pop_back();
    LS_CHECK(!name.empty(), "class names file ", path, ": line ", line, " is empty (one class name a line)");
    LS_CHECK(seen.insert(name).second, "class names file ", path, ": line ", line, " repeats the name '",
             printable(name, 60, ""), "'");
    names.push_back(std::move(name));
    start = end + 1;
  }
  return names;
}

// Fashion-MNIST's label files, known by their labels (count and CRC-32 of the
// bytes after the header), which MNIST's and any other data set's are not.
bool is_fashion_mnist_labels(const std::string& labels_path) {
  const IdxArray labels = read_idx(labels_path, 1);
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), labels.values.data(), static_cast<uInt>(labels.values.size()));
  return (labels.values.size() == 60000 && crc == 0x2ed6e46aUL) || (labels.values.size() == 10000 && crc == 0x242bc73fUL);
}

}  // namespace

std::vector<std::string> idx_class_names(const std::string& dir, const std::string& labels_path,
                                         int64_t num_classes) {
  const std::string listed = (std::filesystem::path(dir) / "classes.txt").string();
  if (is_file(listed)) return listed_class_names(listed);
  if (num_classes == 10 && is_fashion_mnist_labels(labels_path))
    return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
  std::vector<std::string> names;
  for (int64_t c = 0; c < num_classes; ++c) names.push_back(std::to_string(c));
  return names;
}

}  // namespace lockstep::data
