#pragma once
// A Dataset is an indexed set of labelled images of one shape, each pixel a
// byte: reading a sample writes its C*H*W bytes channel-major, or the same
// as floats in [0, 1] (pixel / 255). What happens after (crop, flip,
// normalisation) is the loader's business, or the device's when batches
// travel as bytes. Datasets are read from several loader threads at once:
// read_pixels() and label() must be safe to call concurrently.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/shape.h"

namespace lockstep::data {

class Dataset {
public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Shape sample_shape() const = 0;  // [C, H, W]
  virtual int64_t num_classes() const = 0;
  virtual const std::vector<std::string>& class_names() const = 0;
  virtual int32_t label(int64_t index) const = 0;
  // Writes sample `index` into `out` (sample_shape().numel() bytes).
  // Throws lockstep::Error naming the file when the sample cannot be read.
  virtual void read_pixels(int64_t index, uint8_t* out) const = 0;
  // The same sample as sample_shape().numel() floats, each byte / 255
  // (kernels/augment_math.h's pixel_value, as augmentation converts them).
  void read(int64_t index, float* out) const;
  // Where the samples come from, for messages ("IDX .../train-images-idx3-ubyte.gz").
  virtual std::string source() const = 0;
  // True when every sample is already decoded in memory (reads are cheap).
  virtual bool in_memory() const { return false; }
  // What names sample `index` to a user: an image's path, or the source and index.
  virtual std::string sample_name(int64_t index) const { return source() + " sample " + std::to_string(index); }

  std::vector<int32_t> labels() const;  // every label, in index order
  std::vector<int64_t> class_counts() const;
};

// Decoded uint8 images held in memory once: IDX and CIFAR files, and tests.
class InMemoryDataset final : public Dataset {
public:
  // `pixels` holds size * C*H*W bytes, each sample channel-major ([C, H, W]).
  // Checks the sizes and that every label lies in [0, class_names.size()).
  InMemoryDataset(Shape sample_shape, std::vector<uint8_t> pixels, std::vector<int32_t> labels,
                  std::vector<std::string> class_names, std::string source);

  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  Shape sample_shape() const override { return shape_; }
  int64_t num_classes() const override { return static_cast<int64_t>(class_names_.size()); }
  const std::vector<std::string>& class_names() const override { return class_names_; }
  int32_t label(int64_t index) const override { return labels_[index]; }
  void read_pixels(int64_t index, uint8_t* out) const override;
  std::string source() const override { return source_; }
  bool in_memory() const override { return true; }

  const uint8_t* sample_bytes(int64_t index) const;

private:
  Shape shape_;
  std::vector<uint8_t> pixels_;
  std::vector<int32_t> labels_;
  std::vector<std::string> class_names_;
  std::string source_;
};

// The samples of `parent` at `indices`, in that order (a split's half).
class Subset final : public Dataset {
public:
  Subset(std::shared_ptr<const Dataset> parent, std::vector<int64_t> indices, std::string name);

  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Shape sample_shape() const override { return parent_->sample_shape(); }
  int64_t num_classes() const override { return parent_->num_classes(); }
  const std::vector<std::string>& class_names() const override { return parent_->class_names(); }
  int32_t label(int64_t index) const override { return parent_->label(indices_[index]); }
  void read_pixels(int64_t index, uint8_t* out) const override { parent_->read_pixels(indices_[index], out); }
  std::string source() const override;
  bool in_memory() const override { return parent_->in_memory(); }
  std::string sample_name(int64_t index) const override { return parent_->sample_name(indices_[index]); }

  const std::vector<int64_t>& indices() const { return indices_; }

private:
  std::shared_ptr<const Dataset> parent_;
  std::vector<int64_t> indices_;
  std::string name_;
};

// Bad files met and skipped (skip_bad_images): each file once, with the
// message that names it and says why, however often it was met (a bad image
// fails again every epoch).
struct BadFile {
  std::string path, message;
};
struct BadFiles {
  static constexpr size_t max_listed = 5;  // in summary()
  int64_t count = 0;                       // files.size()
  std::vector<BadFile> files;              // in the order met

  void add(const std::string& path, const std::string& message);  // ignores a path already listed
  void merge(const BadFiles& other);
  bool empty() const { return count == 0; }
  // "skipped 3 bad images: <message>; <message>; ..." (the first max_listed) or "" when none.
  std::string summary() const;

private:
  std::set<std::string> paths_;
};

}  // namespace lockstep::data
