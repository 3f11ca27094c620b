#pragma once
// A data set that hands every call to another: tests derive from it and
// override the calls they change (a slow read, a failing one).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/dataset.h"

namespace lockstep::testing {

class WrappedDataset : public data::Dataset {
public:
  explicit WrappedDataset(std::shared_ptr<const data::Dataset> inner) : inner_(std::move(inner)) {}
  int64_t size() const override { return inner_->size(); }
  Shape sample_shape() const override { return inner_->sample_shape(); }
  int64_t num_classes() const override { return inner_->num_classes(); }
  const std::vector<std::string>& class_names() const override { return inner_->class_names(); }
  int32_t label(int64_t index) const override { return inner_->label(index); }
  void read_pixels(int64_t index, uint8_t* out) const override { inner_->read_pixels(index, out); }
  std::string source() const override { return inner_->source(); }
  bool in_memory() const override { return inner_->in_memory(); }

protected:
  std::shared_ptr<const data::Dataset> inner_;
};

}  // namespace lockstep::testing
