#include "layers/layer.h"

namespace lockstep {

std::string describe(const Layer& layer, const std::vector<Shape>& inputs) {
  std::string s = layer.type() + " '" + layer.name + "' (input";
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : " ") + inputs[i].str();
  return s + "): ";
}

}  // namespace lockstep
