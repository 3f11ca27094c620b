#include "data/dataset.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "kernels/augment_math.h"

namespace lockstep::data {

std::vector<int32_t> Dataset::labels() const {
  std::vector<int32_t> out(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i) out[i] = label(i);
  return out;
}

std::vector<int64_t> Dataset::class_counts() const {
  std::vector<int64_t> counts(static_cast<size_t>(num_classes()), 0);
  for (int64_t i = 0; i < size(); ++i) ++counts[label(i)];
  return counts;
}

InMemoryDataset::InMemoryDataset(Shape sample_shape, std::vector<uint8_t> pixels, std::vector<int32_t> labels,
                                 std::vector<std::string> class_names, std::string source)
    : shape_(sample_shape), pixels_(std::move(pixels)), labels_(std::move(labels)),
      class_names_(std::move(class_names)), source_(std::move(source)) {
  LS_CHECK(shape_.rank() == 3 && shape_.numel() > 0, source_, ": a sample shape must be [C, H, W], not ",
           shape_.str());
  LS_CHECK(!class_names_.empty(), source_, ": a data set needs at least one class");
  LS_CHECK(pixels_.size() == labels_.size() * static_cast<size_t>(shape_.numel()), source_, ": ", pixels_.size(),
           " pixel bytes for ", labels_.size(), " samples of ", shape_.str());
  const int64_t classes = num_classes();
  for (size_t i = 0; i < labels_.size(); ++i)
    LS_CHECK(labels_[i] >= 0 && labels_[i] < classes, source_, ": label ", labels_[i], " of sample ", i,
             " is out of range [0, ", classes, ")");
}

const uint8_t* InMemoryDataset::sample_bytes(int64_t index) const {
  return pixels_.data() + static_cast<size_t>(index) * static_cast<size_t>(shape_.numel());
}

void Dataset::read(int64_t index, float* out) const {
  const int64_t n = sample_shape().numel();
  thread_local std::vector<uint8_t> bytes;
  bytes.resize(static_cast<size_t>(n));
  read_pixels(index, bytes.data());
  for (int64_t i = 0; i < n; ++i) out[i] = pixel_value(bytes[i]);
}

void InMemoryDataset::read_pixels(int64_t index, uint8_t* out) const {
  std::memcpy(out, sample_bytes(index), static_cast<size_t>(shape_.numel()));
}

Subset::Subset(std::shared_ptr<const Dataset> parent, std::vector<int64_t> indices, std::string name)
    : parent_(std::move(parent)), indices_(std::move(indices)), name_(std::move(name)) {
  LS_CHECK(parent_ != nullptr, "Subset of no data set");
  for (int64_t i : indices_)
    LS_CHECK(i >= 0 && i < parent_->size(), "Subset ", name_, " of ", parent_->source(), ": index ", i,
             " is outside [0, ", parent_->size(), ")");
}

std::string Subset::source() const { return parent_->source() + " (" + name_ + ")"; }

void BadFiles::add(const std::string& path, const std::string& message) {
  if (!paths_.insert(path).second) return;
  files.push_back({path, message});
  count = static_cast<int64_t>(files.size());
}

void BadFiles::merge(const BadFiles& other) {
  for (const BadFile& f : other.files) add(f.path, f.message);
}

std::string BadFiles::summary() const {
  if (count == 0) return "";
  std::string out = "skipped " + std::to_string(count) + " bad image" + (count == 1 ? "" : "s") + ": ";
  const size_t listed = std::min(files.size(), max_listed);
  for (size_t i = 0; i < listed; ++i) out += (i ? "; " : "") + files[i].message;
  if (files.size() > listed) out += "; and " + std::to_string(files.size() - listed) + " more";
  return out;
}

}  // namespace lockstep::data
