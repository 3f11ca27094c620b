#pragma once
// Model builders. Each takes one sample's input shape [C, H, W] and the class
// count, and returns an unfinalised Graph (call finalize(device, seed)).
//   mlp         flatten - 256 - relu - dropout(0.2) - 256 - relu - classes
//   simple-cnn  conv64 - relu - pool - conv128 - relu - pool - dropout(0.5) - dense
//               (3x3 'valid' convolutions, 2x2 max pools: the Keras custom-loop example)
//   resnet18    CIFAR variant: 3x3 stem, no max pool, [2,2,2,2] basic blocks of 64..512
//   resnet20    He et al. CIFAR: 3x3 stem of 16, [3,3,3] basic blocks of 16, 32, 64
//   vgg11-bn    VGG-11 with batch norm, one 512 -> classes layer (the CIFAR variant)
// Shortcuts that change shape are 1x1 convolution + batch norm (option B).
#include <memory>
#include <string>
#include <vector>

#include "layers/graph.h"

namespace lockstep {

struct ModelOptions {
  bool dropout = true;  // false drops the dropout layers (deterministic tests, golden runs)
};

std::vector<std::string> model_names();
// Throws an Error naming the model and the shapes when it cannot be built.
std::unique_ptr<Graph> build_model(const std::string& name, const Shape& input, int64_t classes,
                                   const ModelOptions& options = {});

// The spec string a built model reports ("resnet20 3x32x32 10", plus " nodropout"),
// and the inverse: a model built, finalised and initialised from such a string.
std::string model_spec(const std::string& name, const Shape& input, int64_t classes, const ModelOptions& options);
std::unique_ptr<Graph> build_model_from_spec(const std::string& spec, Device device, uint64_t seed);

}  // namespace lockstep
