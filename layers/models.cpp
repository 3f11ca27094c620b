#include "layers/models.h"

#include <sstream>

#include "base/error.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pool.h"
#include "layers/relu.h"

namespace lockstep {

namespace {

// conv -> bn (-> relu): the unit every CNN here is made of.
std::string conv_bn(Graph& g, const std::string& name, const std::string& input, int64_t channels, int kernel,
                    int stride, int padding, bool relu) {
  g.add(name + ".conv", std::make_unique<Conv2d>(channels, kernel, stride, padding, false, Init::fan_out_normal),
        {input});
  std::string out = g.then(name + ".bn", std::make_unique<BatchNorm2d>());
  if (relu) out = g.then(name + ".relu", std::make_unique<ReLU>());
  return out;
}

// Basic residual block: conv3-bn-relu-conv3-bn + shortcut, relu.
std::string basic_block(Graph& g, const std::string& name, const std::string& input, int64_t in_channels,
                        int64_t channels, int stride) {
  std::string a = conv_bn(g, name + ".a", input, channels, 3, stride, 1, true);
  std::string b = conv_bn(g, name + ".b", a, channels, 3, 1, 1, false);
  std::string shortcut = input;
  if (stride != 1 || in_channels != channels) shortcut = conv_bn(g, name + ".down", input, channels, 1, stride, 0, false);
  g.add(name + ".add", std::make_unique<Add>(), {b, shortcut});
  return g.then(name + ".relu", std::make_unique<ReLU>());
}

std::string classifier_head(Graph& g, int64_t classes) {
  g.then("pool", std::make_unique<GlobalAvgPool>());
  g.then("flatten", std::make_unique<Flatten>());
  return g.then("fc", std::make_unique<Linear>(classes));
}

void resnet(Graph& g, int64_t stem_channels, const std::vector<int64_t>& widths, int blocks_per_stage,
            int64_t classes) {
  std::string x = conv_bn(g, "stem", "input", stem_channels, 3, 1, 1, true);
  int64_t in = stem_channels;
  for (size_t s = 0; s < widths.size(); ++s)
    for (int b = 0; b < blocks_per_stage; ++b) {
      int stride = (s > 0 && b == 0) ? 2 : 1;
      x = basic_block(g, "stage" + std::to_string(s + 1) + "." + std::to_string(b), x, in, widths[s], stride);
      in = widths[s];
    }
  classifier_head(g, classes);
}

void vgg11_bn(Graph& g, const Shape& input, int64_t classes) {
  const std::vector<int64_t> cfg = {64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};  // 0 = max pool
  std::string x = "input";
  int64_t size = std::min(input[1], input[2]);
  int conv = 0, pool = 0;
  for (int64_t c : cfg) {
    if (c == 0) {
      // Small inputs (28x28) run out of pixels before the fifth pool: skip pools below 2x2.
      if (size < 2) continue;
      x = g.then("pool" + std::to_string(++pool), std::make_unique<MaxPool2d>(2, 2));
      size /= 2;
    } else {
      x = conv_bn(g, "conv" + std::to_string(++conv), x, c, 3, 1, 1, true);
    }
  }
  classifier_head(g, classes);
}

}  // namespace

std::vector<std::string> model_names() { return {"mlp", "simple-cnn", "resnet18", "resnet20", "vgg11-bn"}; }

std::string model_spec(const std::string& name, const Shape& input, int64_t classes, const ModelOptions& options) {
  std::ostringstream s;
  s << name << " " << input[0] << "x" << input[1] << "x" << input[2] << " " << classes;
  if (!options.dropout) s << " nodropout";
  return s.str();
}

std::unique_ptr<Graph> build_model(const std::string& name, const Shape& input, int64_t classes,
                                   const ModelOptions& options) {
  LS_CHECK(input.rank() == 3 && input.numel() > 0, "model ", name, " takes a [C, H, W] input, got ", input.str());
  auto g = std::make_unique<Graph>(input, classes, model_spec(name, input, classes, options));
  if (name == "mlp") {
    g->then("flatten", std::make_unique<Flatten>());
    g->then("fc1", std::make_unique<Linear>(256));
    g->then("relu1", std::make_unique<ReLU>());
    if (options.dropout) g->then("drop1", std::make_unique<Dropout>(0.2f));
    g->then("fc2", std::make_unique<Linear>(256));
    g->then("relu2", std::make_unique<ReLU>());
    g->then("fc3", std::make_unique<Linear>(classes));
  } else if (name == "simple-cnn") {
    g->then("conv1", std::make_unique<Conv2d>(64, 3));
    g->then("relu1", std::make_unique<ReLU>());
    g->then("pool1", std::make_unique<MaxPool2d>(2, 2));
    g->then("conv2", std::make_unique<Conv2d>(128, 3));
    g->then("relu2", std::make_unique<ReLU>());
    g->then("pool2", std::make_unique<MaxPool2d>(2, 2));
    g->then("flatten", std::make_unique<Flatten>());
    if (options.dropout) g->then("drop", std::make_unique<Dropout>(0.5f));
    g->then("fc", std::make_unique<Linear>(classes));
  } else if (name == "resnet18") {
    resnet(*g, 64, {64, 128, 256, 512}, 2, classes);
  } else if (name == "resnet20") {
    resnet(*g, 16, {16, 32, 64}, 3, classes);
  } else if (name == "vgg11-bn") {
    vgg11_bn(*g, input, classes);
  } else {
    std::string known;
    for (auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    LS_FAIL("unknown model '", name, "': expected one of ", known);
  }
  return g;
}

std::unique_ptr<Graph> build_model_from_spec(const std::string& spec, Device device, uint64_t seed) {
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
  auto g = build_model(name, Shape{c, h, w}, classes, options);
  g->finalize(device, seed);
  return g;
}

}  // namespace lockstep
