#include "layers/models.h"

#include <algorithm>
#include <sstream>

#include "base/error.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool.h"
#include "layers/relu.h"

namespace lockstep {

namespace {

// A convolution without bias as every conv -> bn unit starts; returns its name.
std::string conv_for_bn(Graph& g, const std::string& name, const std::string& input, int64_t channels, int kernel,
                        int stride, int padding) {
  return g.add(name + ".conv", std::make_unique<Conv2d>(channels, kernel, stride, padding, false, Init::fan_out_normal),
               {input});
}

// conv -> bn (-> relu): the unit every CNN here is made of.
std::string conv_bn(Graph& g, const std::string& name, const std::string& input, int64_t channels, int kernel,
                    int stride, int padding, bool relu) {
  conv_for_bn(g, name, input, channels, kernel, stride, padding);
  // With the ReLU: one fused layer (the same results, half the passes over the activations).
  return g.then(name + ".bn", relu ? BatchNorm2d::with_relu() : std::make_unique<BatchNorm2d>());
}

// The shortcut of a residual block: the block's input, or 1x1 conv + bn where the shape changes (option B).
std::string shortcut(Graph& g, const std::string& name, const std::string& input, int64_t in_channels,
                     int64_t out_channels, int stride) {
  if (stride == 1 && in_channels == out_channels) return input;
  return conv_bn(g, name + ".down", input, out_channels, 1, stride, 0, false);
}

// The block's last bn, the add of the shortcut and the relu as one fused
// layer named as the bn (its parameters keep their names), added after the
// shortcut's nodes so that the parameters are drawn in the order they were
// when bn, add and relu were nodes of their own.
std::string residual_join(Graph& g, const std::string& bn_name, const std::string& conv, const std::string& skip) {
  return g.add(bn_name + ".bn", BatchNorm2d::with_add_relu(), {conv, skip});
}

// Basic residual block: conv3-bn-relu-conv3-bn + shortcut, relu. Returns its output channels.
int64_t basic_block(Graph& g, const std::string& name, std::string& x, int64_t in_channels, int64_t width, int stride) {
  std::string a = conv_bn(g, name + ".a", x, width, 3, stride, 1, true);
  std::string b = conv_for_bn(g, name + ".b", a, width, 3, 1, 1);
  x = residual_join(g, name + ".b", b, shortcut(g, name, x, in_channels, width, stride));
  return width;
}

// Bottleneck block as torchvision's (v1.5): 1x1 reduce, 3x3 carrying the
// stride, 1x1 expand to 4x the width, + shortcut, relu.
int64_t bottleneck_block(Graph& g, const std::string& name, std::string& x, int64_t in_channels, int64_t width,
                         int stride) {
  const int64_t out_channels = 4 * width;
  std::string a = conv_bn(g, name + ".a", x, width, 1, 1, 0, true);
  std::string b = conv_bn(g, name + ".b", a, width, 3, stride, 1, true);
  std::string c = conv_for_bn(g, name + ".c", b, out_channels, 1, 1, 0);
  x = residual_join(g, name + ".c", c, shortcut(g, name, x, in_channels, out_channels, stride));
  return out_channels;
}

std::string classifier_head(Graph& g, int64_t classes) {
  g.then("pool", std::make_unique<GlobalAvgPool>());
  g.then("flatten", std::make_unique<Flatten>());
  return g.then("fc", std::make_unique<Linear>(classes));
}

struct ResNetLayout {
  int64_t stem_channels;
  std::vector<int64_t> widths;  // per stage
  std::vector<int> blocks;      // per stage
  bool bottleneck;
  bool imagenet_stem;  // 7x7 stride-2 conv + 3x3 stride-2 max pool, else the CIFAR 3x3 stride-1 conv
};

void resnet(Graph& g, const std::string& from, const ResNetLayout& layout, int64_t classes) {
  std::string x;
  if (layout.imagenet_stem) {
    conv_bn(g, "stem", from, layout.stem_channels, 7, 2, 3, true);
    x = g.then("stem.pool", std::make_unique<MaxPool2d>(3, 2, 1));
  } else {
    x = conv_bn(g, "stem", from, layout.stem_channels, 3, 1, 1, true);
  }
  int64_t in = layout.stem_channels;
  for (size_t s = 0; s < layout.widths.size(); ++s)
    for (int b = 0; b < layout.blocks[s]; ++b) {
      const int stride = (s > 0 && b == 0) ? 2 : 1;
      const std::string name = "stage" + std::to_string(s + 1) + "." + std::to_string(b);
      in = layout.bottleneck ? bottleneck_block(g, name, x, in, layout.widths[s], stride)
                             : basic_block(g, name, x, in, layout.widths[s], stride);
    }
  classifier_head(g, classes);
}

// VGG's convolutions, 3x3 'same' (0 in the list: a 2x2 max pool). Inputs too
// small for every pool (32x32 has four halvings in it, 28x28 three) skip the
// pools that would go below 1x1, so the flatten size follows the input.
const std::vector<int64_t> vgg11_convs = {64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
const std::vector<int64_t> vgg16_convs = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};

void vgg_features(Graph& g, const std::string& from, const Shape& input, const std::vector<int64_t>& convs,
                  bool batch_norm) {
  std::string x = from;
  int64_t size = std::min(input[1], input[2]);
  int conv = 0, pool = 0;
  for (int64_t c : convs) {
    if (c == 0) {
      if (size < 2) continue;
      x = g.then("pool" + std::to_string(++pool), std::make_unique<MaxPool2d>(2, 2));
      size /= 2;
      continue;
    }
    const std::string name = "conv" + std::to_string(++conv);
    if (batch_norm) {
      x = conv_bn(g, name, x, c, 3, 1, 1, true);
    } else {
      // Without batch norm the convolution keeps its bias (torchvision's vgg16).
      g.add(name + ".conv", std::make_unique<Conv2d>(c, 3, 1, 1, true, Init::fan_out_normal), {x});
      x = g.then(name + ".relu", std::make_unique<ReLU>());
    }
  }
}

// Flatten, then Linear + ReLU per hidden width, with dropout 0.5 after the
// 4096-wide ones (torchvision's VGG classifier), then Linear to the classes.
// The hidden layers start from He et al.'s N(0, 2/fan_in), which keeps the
// signal's second moment through linear + ReLU; PyTorch's default
// U(+-1/sqrt(fan_in)) shrinks it sixfold per layer, 1296-fold over vgg-f's
// four, and from it vgg-f sat at chance on a 3-class toy folder.
void vgg_classifier(Graph& g, const std::vector<int64_t>& hidden, int64_t classes, const ModelOptions& options) {
  g.then("flatten", std::make_unique<Flatten>());
  for (size_t i = 0; i < hidden.size(); ++i) {
    const std::string name = "fc" + std::to_string(i + 1);
    g.then(name, std::make_unique<Linear>(hidden[i], true, Init::fan_in_normal));
    g.then(name + ".relu", std::make_unique<ReLU>());
    if (options.dropout && hidden[i] == 4096) g.then(name + ".drop", std::make_unique<Dropout>(0.5f));
  }
  g.then("fc", std::make_unique<Linear>(classes));
}

// Three blocks of eight conv3-bn-relu (16, 32, 64 channels), 2x2 max pools between them.
void deep_cnn(Graph& g, const std::string& from, int64_t classes) {
  std::string x = from;
  const std::vector<int64_t> widths = {16, 32, 64};
  for (size_t b = 0; b < widths.size(); ++b) {
    if (b > 0) x = g.then("pool" + std::to_string(b), std::make_unique<MaxPool2d>(2, 2));
    for (int i = 0; i < 8; ++i)
      x = conv_bn(g, "block" + std::to_string(b + 1) + "." + std::to_string(i), x, widths[b], 3, 1, 1, true);
  }
  classifier_head(g, classes);
}

// torchvision's ImageNet architectures, node for node under torchvision's
// module names, so that a node's parameters are named as the state dict's
// tensors ("layer1.0.conv1.weight", "features.0.bias", "bn1.running_mean"):
// training/pretrained.h loads and exports them by name. ReLUs fused into a
// batch norm have no node of their own.

// torchvision's BasicBlock (expansion 1) or Bottleneck (x4, stride on the
// 3x3: ResNet v1.5), with downsample.0/.1 (1x1 conv + bn) where the shape changes.
int64_t tv_block(Graph& g, const std::string& name, std::string& x, int64_t in_channels, int64_t width, int stride,
                 bool bottleneck) {
  const int64_t out_channels = bottleneck ? 4 * width : width;
  auto conv = [&](const std::string& conv_name, const std::string& input, int64_t channels, int kernel, int s) {
    return g.add(name + "." + conv_name,
                 std::make_unique<Conv2d>(channels, kernel, s, kernel / 2, false, Init::fan_out_normal), {input});
  };
  std::string last_conv;
  if (bottleneck) {
    conv("conv1", x, width, 1, 1);
    const std::string a = g.then(name + ".bn1", BatchNorm2d::with_relu());
    conv("conv2", a, width, 3, stride);
    const std::string b = g.then(name + ".bn2", BatchNorm2d::with_relu());
    last_conv = conv("conv3", b, out_channels, 1, 1);
  } else {
    conv("conv1", x, width, 3, stride);
    const std::string a = g.then(name + ".bn1", BatchNorm2d::with_relu());
    last_conv = conv("conv2", a, width, 3, 1);
  }
  std::string skip = x;
  if (stride != 1 || in_channels != out_channels) {
    conv("downsample.0", x, out_channels, 1, stride);
    skip = g.then(name + ".downsample.1", std::make_unique<BatchNorm2d>());
  }
  x = g.add(name + (bottleneck ? ".bn3" : ".bn2"), BatchNorm2d::with_add_relu(), {last_conv, skip});
  return out_channels;
}

void tv_resnet(Graph& g, const std::string& from, const std::vector<int>& blocks, bool bottleneck, int64_t classes) {
  g.add("conv1", std::make_unique<Conv2d>(64, 7, 2, 3, false, Init::fan_out_normal), {from});
  g.then("bn1", BatchNorm2d::with_relu());
  std::string x = g.then("maxpool", std::make_unique<MaxPool2d>(3, 2, 1));
  int64_t in = 64;
  const std::vector<int64_t> widths = {64, 128, 256, 512};
  for (size_t s = 0; s < widths.size(); ++s)
    for (int b = 0; b < blocks[s]; ++b)
      in = tv_block(g, "layer" + std::to_string(s + 1) + "." + std::to_string(b), x, in, widths[s],
                    (s > 0 && b == 0) ? 2 : 1, bottleneck);
  g.then("avgpool", std::make_unique<GlobalAvgPool>());
  g.then("flatten", std::make_unique<Flatten>());
  g.then("fc", std::make_unique<Linear>(classes));
}

// torchvision's VGG: features.N as its nn.Sequential numbers them (conv,
// [bn,] relu per convolution, a 2x2 max pool per 'M'; the convolutions keep
// their bias even before batch norm), avgpool (adaptive, to 7x7), then
// classifier.0/3/6 linear with ReLU and dropout(0.5) between. The adaptive
// pool is left out where the features already end at 7x7 (224x224 inputs),
// where it is the identity.
void tv_vgg(Graph& g, const std::string& from, const Shape& input, bool batch_norm, int64_t classes,
            const ModelOptions& options, const std::string& name) {
  LS_CHECK(std::min(input[1], input[2]) >= 32, "model ", name, " takes inputs of at least 32x32 (its five 2x2 max ",
           "pools), got ", input.str());
  std::string x = from;
  int index = 0;
  int64_t h = input[1], w = input[2];
  for (int64_t c : vgg16_convs) {
    if (c == 0) {
      x = g.then("features." + std::to_string(index++), std::make_unique<MaxPool2d>(2, 2));
      h /= 2, w /= 2;
      continue;
    }
    g.add("features." + std::to_string(index++), std::make_unique<Conv2d>(c, 3, 1, 1, true, Init::fan_out_normal),
          {x});
    if (batch_norm) {
      x = g.then("features." + std::to_string(index++), BatchNorm2d::with_relu());
      ++index;  // the ReLU, fused into the batch norm
    } else {
      x = g.then("features." + std::to_string(index++), std::make_unique<ReLU>());
    }
  }
  if (h != 7 || w != 7) g.then("avgpool", std::make_unique<AdaptiveAvgPool2d>(7, 7));
  g.then("flatten", std::make_unique<Flatten>());
  for (int i : {0, 3}) {
    g.then("classifier." + std::to_string(i), std::make_unique<Linear>(4096, true, Init::fan_in_normal));
    g.then("classifier." + std::to_string(i + 1), std::make_unique<ReLU>());
    if (options.dropout) g.then("classifier." + std::to_string(i + 2), std::make_unique<Dropout>(0.5f));
  }
  g.then("classifier.6", std::make_unique<Linear>(classes));
}

}  // namespace

std::vector<std::string> model_names() {
  return {"mlp",      "simple-cnn", "small-cnn", "resnet18", "resnet20", "resnet50",
          "vgg11-bn", "vgg16",      "vgg16-bn", "vgg-f",    "deep-cnn",
          "tv-resnet18", "tv-resnet34", "tv-resnet50", "tv-vgg16", "tv-vgg16-bn"};
}

std::string model_spec(const std::string& name, const Shape& input, int64_t classes, const ModelOptions& options) {
  std::ostringstream s;
  s << name << " " << input[0] << "x" << input[1] << "x" << input[2] << " " << classes;
  if (!options.dropout) s << " nodropout";
  return s.str();
}

void add_model_layers(Graph& g, const std::string& name, const std::string& from, const Shape& input, int64_t classes,
                      const ModelOptions& options) {
  LS_CHECK(input.rank() == 3 && input.numel() > 0, "model ", name, " takes a [C, H, W] input, got ", input.str());
  if (name == "mlp") {
    g.add("flatten", std::make_unique<Flatten>(), {from});
    g.then("fc1", std::make_unique<Linear>(256));
    g.then("relu1", std::make_unique<ReLU>());
    if (options.dropout) g.then("drop1", std::make_unique<Dropout>(0.2f));
    g.then("fc2", std::make_unique<Linear>(256));
    g.then("relu2", std::make_unique<ReLU>());
    g.then("fc3", std::make_unique<Linear>(classes));
  } else if (name == "simple-cnn") {
    g.add("conv1", std::make_unique<Conv2d>(64, 3), {from});
    g.then("relu1", std::make_unique<ReLU>());
    g.then("pool1", std::make_unique<MaxPool2d>(2, 2));
    g.then("conv2", std::make_unique<Conv2d>(128, 3));
    g.then("relu2", std::make_unique<ReLU>());
    g.then("pool2", std::make_unique<MaxPool2d>(2, 2));
    g.then("flatten", std::make_unique<Flatten>());
    if (options.dropout) g.then("drop", std::make_unique<Dropout>(0.5f));
    g.then("fc", std::make_unique<Linear>(classes));
  } else if (name == "small-cnn") {
    // Pooling before batch norm and ReLU: they then touch a quarter of the
    // values (max pooling commutes with ReLU, and BN learns its own scale).
    std::string x = from;
    for (auto [name, width] : {std::pair{"conv1", 32}, std::pair{"conv2", 64}}) {
      g.add(std::string(name) + ".conv",
            std::make_unique<Conv2d>(width, 3, 1, 1, false, Init::fan_out_normal), {x});
      g.then(std::string(name) + ".pool", std::make_unique<MaxPool2d>(2, 2));
      x = g.then(std::string(name) + ".bn", BatchNorm2d::with_relu());
    }
    g.then("flatten", std::make_unique<Flatten>());
    if (options.dropout) g.then("drop", std::make_unique<Dropout>(0.25f));
    g.then("fc", std::make_unique<Linear>(classes));
  } else if (name == "resnet18") {
    resnet(g, from, {64, {64, 128, 256, 512}, {2, 2, 2, 2}, false, false}, classes);
  } else if (name == "resnet20") {
    resnet(g, from, {16, {16, 32, 64}, {3, 3, 3}, false, false}, classes);
  } else if (name == "resnet50") {
    const bool imagenet_stem = std::min(input[1], input[2]) >= 64;
    resnet(g, from, {64, {64, 128, 256, 512}, {3, 4, 6, 3}, true, imagenet_stem}, classes);
  } else if (name == "vgg11-bn") {
    vgg_features(g, from, input, vgg11_convs, true);
    classifier_head(g, classes);
  } else if (name == "vgg16" || name == "vgg16-bn") {
    vgg_features(g, from, input, vgg16_convs, name == "vgg16-bn");
    vgg_classifier(g, {4096, 4096}, classes, options);
  } else if (name == "vgg-f") {
    vgg_features(g, from, input, vgg16_convs, false);
    vgg_classifier(g, {4096, 4096, 1024, 256}, classes, options);
  } else if (name == "deep-cnn") {
    deep_cnn(g, from, classes);
  } else if (name == "tv-resnet18" || name == "tv-resnet34") {
    tv_resnet(g, from, name == "tv-resnet18" ? std::vector<int>{2, 2, 2, 2} : std::vector<int>{3, 4, 6, 3}, false,
              classes);
  } else if (name == "tv-resnet50") {
    tv_resnet(g, from, {3, 4, 6, 3}, true, classes);
  } else if (name == "tv-vgg16" || name == "tv-vgg16-bn") {
    tv_vgg(g, from, input, name == "tv-vgg16-bn", classes, options, name);
  } else {
    std::string known;
    for (auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    LS_FAIL("unknown model '", name, "': expected one of ", known);
  }
}

std::unique_ptr<Graph> build_model(const std::string& name, const Shape& input, int64_t classes,
                                   const ModelOptions& options) {
  LS_CHECK(input.rank() == 3 && input.numel() > 0, "model ", name, " takes a [C, H, W] input, got ", input.str());
  auto g = std::make_unique<Graph>(input, classes, model_spec(name, input, classes, options));
  add_model_layers(*g, name, "input", input, classes, options);
  return g;
}

std::unique_ptr<Graph> build_model_from_spec(const std::string& spec, Device device, uint64_t seed) {
  auto g = graph_from_spec(spec);
  g->finalize(device, seed);
  return g;
}

std::unique_ptr<Graph> graph_from_spec(const std::string& spec) {
  std::istringstream in(spec);
  std::string name, dims, flag;
  int64_t classes = 0, c = 0, h = 0, w = 0;
  char x1 = 0, x2 = 0;
  in >> name >> dims >> classes;
  std::istringstream d(dims);
  d >> c >> x1 >> h >> x2 >> w;
  LS_CHECK(!in.fail() && x1 == 'x' && x2 == 'x', "cannot read model spec '", spec, "'");
  ModelOptions options;
  while (in >> flag) {
    LS_CHECK(flag == "nodropout", "unknown option '", flag, "' in model spec '", spec, "'");
    options.dropout = false;
  }
  return build_model(name, Shape{c, h, w}, classes, options);
}

}  // namespace lockstep
