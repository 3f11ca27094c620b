#include "layers/layer.h"

namespace lockstep {

std::string describe(const Layer& layer, const std::vector<Shape>& inputs) {
  std::string s = layer.type() + " '" + layer.name + "' (input";
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : " ") + inputs[i].str();
  return s + "): ";
}

bool same_buffer(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.device() == b.device() && a.raw() == b.raw() && a.numel() == b.numel();
}

}  // namespace lockstep
