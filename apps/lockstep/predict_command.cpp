// lockstep predict: the top classes of each image, with probabilities.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "commands.h"
#include "data/augment.h"
#include "data/image_folder.h"
#include "training/checkpoint.h"
#include "base/error.h"
#include "layers/models.h"
#include "setup.h"

namespace lockstep::app {

int run_predict(const PredictSettings& s) {
  LS_CHECK(!s.images.empty(), "predict needs at least one image file");
  LoadedCheckpoint ck = read_checkpoint(s.checkpoint);
  auto model = build_model_from_spec(ck.info.model_spec, Device::cpu(), 0);
  load_into(*model, ck, s.checkpoint);
  data::Normalization norm;
  if (ck.info.extra.count("normalization")) norm = normalization_from_json(ck.info.extra.at("normalization"));

  Shape shape = model->input_shape();
  const int64_t classes = model->num_classes();
  Context ctx(Device::cpu());
  int failures = 0;
  for (const std::string& path : s.images) {
    std::vector<float> pixels(shape.numel());
    try {
      data::load_image(path, shape[0], shape[1], shape[2], pixels.data(), s.max_image_pixels);
    } catch (const Error& e) {
      std::fprintf(stderr, "lockstep: %s\n", e.what());
      ++failures;
      continue;
    }
    if (!norm.mean.empty()) data::normalize(pixels.data(), shape, norm);
    Tensor images = Tensor::from_vector(Shape{1, shape[0], shape[1], shape[2]}, pixels);
    std::vector<float> logits = model->logits(ctx, images).to_vector();
    // Softmax around the largest logit.
    float top = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float z : logits) sum += std::exp(static_cast<double>(z - top));
    std::vector<int> order(classes);
    std::iota(order.begin(), order.end(), 0);
    int64_t shown = std::min<int64_t>(s.top, classes);
    std::partial_sort(order.begin(), order.begin() + shown, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b]; });
    std::printf("%s\n", path.c_str());
    for (int64_t k = 0; k < shown; ++k) {
      int c = order[k];
      std::string name = c < static_cast<int>(ck.info.class_names.size()) ? ck.info.class_names[c] : std::to_string(c);
      std::printf("  %6.2f%%  %s\n", 100.0 * std::exp(static_cast<double>(logits[c] - top)) / sum, name.c_str());
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace lockstep::app
