#include "data/cifar.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <filesystem>
#include <fstream>
#include <regex>

#include "data/file_bytes.h"
#include "base/error.h"

namespace lockstep::data {
namespace {
constexpr size_t kPixels = 3 * 32 * 32;
constexpr size_t kRecord = 1 + kPixels;

// The N of data_batch_N.bin; a number beyond int sorts last (not std::stoi's "stoi" error).
int batch_number(const std::string& digits) {
  int number = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  return error == std::errc() && end == digits.data() + digits.size() ? number : INT_MAX;
}
}  // namespace

std::shared_ptr<InMemoryDataset> read_cifar10(const std::vector<std::string>& batch_files,
                                              std::vector<std::string> class_names) {
  LS_CHECK(!batch_files.empty(), "CIFAR-10: no batch files given");
  const int64_t classes = static_cast<int64_t>(class_names.size());
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  for (const std::string& path : batch_files) {
    std::vector<uint8_t> bytes = read_file_bytes(path, "CIFAR-10 batch");
    LS_CHECK(!bytes.empty(), "CIFAR-10 batch ", path, ": empty file");
    LS_CHECK(bytes.size() % kRecord == 0, "CIFAR-10 batch ", path, ": truncated or not a CIFAR-10 batch (",
             bytes.size(), " bytes is not a whole number of ", kRecord, "-byte records)");
    const size_t records = bytes.size() / kRecord;
    pixels.reserve(pixels.size() + records * kPixels);
    for (size_t r = 0; r < records; ++r) {
      const uint8_t* record = bytes.data() + r * kRecord;
      LS_CHECK(record[0] < classes, "CIFAR-10 batch ", path, ": label ", int{record[0]}, " of record ", r,
               " is out of range [0, ", classes, ")");
      labels.push_back(record[0]);
      pixels.insert(pixels.end(), record + 1, record + kRecord);
    }
  }
  std::string source = "CIFAR-10 " + batch_files.front();
  if (batch_files.size() > 1) source += " and " + std::to_string(batch_files.size() - 1) + " more";
  return std::make_shared<InMemoryDataset>(Shape{3, 32, 32}, std::move(pixels), std::move(labels),
                                           std::move(class_names), source);
}

std::optional<CifarFiles> find_cifar10_files(const std::string& dir) {
  namespace fs = std::filesystem;
  for (fs::path folder : {fs::path(dir), fs::path(dir) / "cifar-10-batches-bin"}) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) continue;
    CifarFiles files;
    std::vector<std::pair<int, std::string>> numbered;
    static const std::regex batch_name(R"(data_batch_(\d+)\.bin)");
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
      const std::string name = entry.path().filename().string();
      std::smatch match;
      if (std::regex_match(name, match, batch_name) && is_file(entry.path().string()))
        numbered.emplace_back(batch_number(match[1].str()), entry.path().string());
    }
    const std::string test = (folder / "test_batch.bin").string();
    if (numbered.empty() && !is_file(test)) continue;
    LS_CHECK(!numbered.empty(), "CIFAR-10 folder ", folder.string(), ": has test_batch.bin but no data_batch_*.bin");
    LS_CHECK(is_file(test), "CIFAR-10 folder ", folder.string(), ": has data_batch_*.bin but no test_batch.bin");
    std::sort(numbered.begin(), numbered.end());
    for (auto& [number, path] : numbered) files.train.push_back(path);
    files.test = test;
    const std::string meta = (folder / "batches.meta.txt").string();
    if (is_file(meta)) files.meta = meta;
    return files;
  }
  return std::nullopt;
}

std::vector<std::string> cifar10_class_names(const std::string& meta_path, int64_t num_classes) {
  std::vector<std::string> names;
  if (!meta_path.empty()) {
    std::ifstream in(meta_path);
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
      if (!line.empty()) names.push_back(line);
    }
  }
  if (static_cast<int64_t>(names.size()) == num_classes) return names;
  names = {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  if (num_classes == 10) return names;
  names.clear();
  for (int64_t c = 0; c < num_classes; ++c) names.push_back(std::to_string(c));
  return names;
}

}  // namespace lockstep::data
