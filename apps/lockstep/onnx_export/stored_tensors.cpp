#include "stored_tensors.h"

#include "base/error.h"
#include "training/state_values.h"

namespace lockstep::app::onnx_export {

namespace {

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

}  // namespace

const std::vector<float>& StoredTensors::get(const std::string& name, const std::vector<int64_t>& dims) const {
  const std::string where = "checkpoint " + path_ + " (model " + checkpoint_.info.model_spec + "): ";
  const auto it = checkpoint_.tensors.find(name);
  LS_CHECK(it != checkpoint_.tensors.end(), where, "no tensor ", name, ", which the model needs");
  const Shape& shape = it->second.first;
  std::vector<int64_t> stored(static_cast<size_t>(shape.rank()));
  for (int i = 0; i < shape.rank(); ++i) stored[i] = shape[i];
  LS_CHECK(stored == dims, where, "tensor ", name, " has shape ", dims_text(stored), ", the model's is ",
           dims_text(dims));
  const std::string problem = state_value_problem(name, it->second.second);
  LS_CHECK(problem.empty(), where, "holds values no model can run with: ", name, " ", problem);
  return it->second.second;
}

}  // namespace lockstep::app::onnx_export
