#pragma once
// Model builders. Each takes one sample's input shape [C, H, W] and the class
// count, and returns an unfinalised Graph (call finalize(device, seed)).
//   mlp         flatten - 256 - relu - dropout(0.2) - 256 - relu - classes
//   simple-cnn  conv64 - relu - pool - conv128 - relu - pool - dropout(0.5) - dense
//               (3x3 'valid' convolutions, 2x2 max pools: the Keras custom-loop example)
//   small-cnn   (conv32 - pool - bn - relu) - (conv64 - pool - bn - relu) - dropout(0.25) - dense
//               (3x3 'same' convolutions without bias, 2x2 max pools): the CPU default
//   resnet18    CIFAR variant: 3x3 stem, no max pool, [2,2,2,2] basic blocks of 64..512
//   resnet20    He et al. CIFAR: 3x3 stem of 16, [3,3,3] basic blocks of 16, 32, 64
//   resnet50    bottleneck blocks (1x1-3x3-1x1, x4 expansion, stride on the 3x3 as torchvision's),
//               [3,4,6,3] of 64..512; 7x7 stride-2 stem + 3x3 stride-2 max pool for inputs of
//               64 px and more, the CIFAR 3x3 stem below (3x224x224, 1000 classes: 25,557,032)
//   vgg11-bn    VGG-11 with batch norm, one 512 -> classes layer (the CIFAR variant)
//   vgg16       torchvision's VGG-16: 13 conv3 (with bias) + relu, 4096 - 4096 - classes with
//               dropout(0.5) after each 4096 (3x224x224, 1000 classes: 138,357,544)
//   vgg16-bn    the same with conv - bn - relu; the conv drops the bias that bn makes redundant
//               (4,224 fewer parameters than torchvision's vgg16_bn)
//   vgg-f       vgg16 with the classifier 4096 - 4096 - 1024 - 256 - classes
//   deep-cnn    three blocks of eight conv3 - bn - relu (16, 32, 64), 2x2 max pool between
//               blocks, global average pool, linear
// torchvision's ImageNet models, module for module, with its module names as node
// names (so its state dicts load by name: training/pretrained.h) and its 7x7
// stride-2 stem (conv1 without bias, bn1, relu, 3x3 stride-2 max pool with padding 1):
//   tv-resnet18 tv-resnet34   basic blocks [2,2,2,2] / [3,4,6,3] (11,689,512 / 21,797,672)
//   tv-resnet50   bottlenecks [3,4,6,3], stride on the 3x3 (v1.5) (25,557,032)
//   tv-vgg16 tv-vgg16-bn      features.N, adaptive average pool to 7x7 (any input of 32 px
//                             and more; left out at 224x224, where it is the identity),
//                             classifier.0/3/6 (138,357,544 / 138,365,992)
//   (counts at 3x224x224, 1000 classes). The other models are the CIFAR-sized variants.
// Shortcuts that change shape are 1x1 convolution + batch norm (option B). The VGGs
// have no adaptive pool: the flatten size follows the input (512x7x7 at 224x224), and
// inputs too small for all five 2x2 pools skip the ones that would leave less than 1x1.
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
// What build_model adds to its graph, reading node `from` (per-sample shape
// `input`) instead of the data: lets a caller put its own layers in front
// (the model tests put a learnable input there to check the input gradient).
void add_model_layers(Graph& g, const std::string& name, const std::string& from, const Shape& input, int64_t classes,
                      const ModelOptions& options = {});

// The spec string a built model reports ("resnet20 3x32x32 10", plus " nodropout"),
// and the inverse: a model built, finalised and initialised from such a string.
std::string model_spec(const std::string& name, const Shape& input, int64_t classes, const ModelOptions& options);
std::unique_ptr<Graph> build_model_from_spec(const std::string& spec, Device device, uint64_t seed);
// The graph a spec describes, not finalised (nothing allocated): for its sizes and memory plan.
std::unique_ptr<Graph> graph_from_spec(const std::string& spec);

}  // namespace lockstep
