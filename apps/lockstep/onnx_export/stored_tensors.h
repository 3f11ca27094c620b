#pragma once
// A checkpoint's tensors as the ONNX export reads them, by the graph's names
// ("<node>.<name>"), each checked where it is used: present, of the shape the
// checkpoint's own model spec gives it, and holding values a model can run
// with (training/state_values.h). So a checkpoint whose tensors do not fit
// its spec, or that holds NaN or a negative variance, is refused naming the
// file and the tensor, instead of becoming a model that computes nonsense.
#include <cstdint>
#include <string>
#include <vector>

#include "training/checkpoint.h"

namespace lockstep::app::onnx_export {

class StoredTensors {
public:
  StoredTensors(const LoadedCheckpoint& checkpoint, std::string path) : checkpoint_(checkpoint), path_(std::move(path)) {}
  // The values of tensor `name`, which must have shape `dims`; throws an Error otherwise.
  const std::vector<float>& get(const std::string& name, const std::vector<int64_t>& dims) const;
  const std::string& path() const { return path_; }

private:
  const LoadedCheckpoint& checkpoint_;
  std::string path_;
};

}  // namespace lockstep::app::onnx_export
