// lockstep predict: the top classes of each image, with probabilities, as a
// table or as JSON lines. Folders given are searched for images (any depth).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "commands.h"
#include "data/augment.h"
#include "data/image_folder.h"
#include "training/checkpoint.h"
#include "training/safetensors.h"
#include "base/error.h"
#include "layers/models.h"
#include "setup.h"

namespace lockstep::app {

namespace {
namespace fs = std::filesystem;

// The files named, and the images under the folders named (sorted per folder).
std::vector<std::string> expand_images(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      out.push_back(arg);  // a file, or a missing path that load_image names
      continue;
    }
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(arg, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.empty() && name[0] == '.') {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      // Any image-named entry that is not a folder, whatever its kind (a FIFO, a
      // dangling link): its load names what is wrong, rather than it being left out.
      if (!it->is_directory(ec) && data::is_image_file_name(name)) found.push_back(it->path().string());
    }
    LS_CHECK(!ec, "predict: cannot read folder ", arg, " (", ec.message(), ")");
    LS_CHECK(!found.empty(), "predict: folder ", arg, " holds no images (.jpg, .jpeg, .png, .bmp, .gif)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

struct Ranked {
  int index;
  double probability;
};

// `object` with the text field `key`: as it is when it is UTF-8; otherwise
// with U+FFFD for the bytes that are not, and its exact bytes as hex beside
// it ("<key>_hex"), as the checkpoint keeps class names. File and class
// names are bytes on Linux, and JSON text must be UTF-8.
nlohmann::json with_text(nlohmann::json object, const std::string& key, const std::string& value) {
  if (valid_utf8(value)) {
    object[key] = value;
    return object;
  }
  const std::string replaced =
      nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  object[key] = nlohmann::json::parse(replaced);
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : value) {
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  object[key + "_hex"] = hex;
  return object;
}

void print_json_line(const nlohmann::json& line) {
  std::printf("%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

void print_table_header(size_t path_width, int64_t shown) {
  std::printf("%-*s", static_cast<int>(path_width), "image");
  for (int64_t k = 0; k < shown; ++k) std::printf("  %-16s %7s", k == 0 ? "class" : ("class " + std::to_string(k + 1)).c_str(), "prob");
  std::printf("\n");
}

}  // namespace

int run_predict(const PredictSettings& s) {
  LS_CHECK(!s.images.empty(), "predict needs at least one image file or folder");
  LoadedCheckpoint ck = read_checkpoint(s.checkpoint);
  auto model = build_model_from_spec(ck.info.model_spec, Device::cpu(), 0);
  const std::string weights = take_inference_weights(ck, s.checkpoint, s.no_ema);
  load_into(*model, ck, s.checkpoint, /*with_optimizer_state=*/false);
  // JSON lines keep stdout to one object a line: the note goes to stderr there.
  if (!weights.empty()) std::fprintf(s.json ? stderr : stdout, "%s\n", weights.c_str());
  const data::Normalization norm = checkpoint_normalization(ck.info.extra);
  const std::vector<std::string> images = expand_images(s.images);
  data::DataOptions fit;  // the checkpoint's way of fitting an image to the input, as its test images
  set_image_fit(fit, checkpoint_setting(ck.info.extra, "augment"));

  Shape shape = model->input_shape();
  const int64_t classes = model->num_classes();
  const int64_t shown = std::min<int64_t>(s.top, classes);
  auto class_name = [&](int c) {
    return c < static_cast<int>(ck.info.class_names.size()) ? ck.info.class_names[c] : std::to_string(c);
  };
  size_t path_width = 5;
  for (const std::string& path : images) path_width = std::max(path_width, path.size());
  if (!s.json) print_table_header(path_width, shown);

  Context ctx(Device::cpu());
  int failures = 0;
  for (const std::string& path : images) {
    std::vector<float> pixels(shape.numel());
    try {
      data::load_image(path, shape[0], shape[1], shape[2], pixels.data(), s.max_image_pixels, fit.test_center_crop);
    } catch (const Error& e) {
      if (s.json)
        print_json_line(with_text(with_text({}, "image", path), "error", e.what()));
      else
        std::fprintf(stderr, "lockstep: %s\n", e.what());
      ++failures;
      continue;
    }
    if (!norm.mean.empty()) data::normalize(pixels.data(), shape, norm);
    Tensor batch = Tensor::from_vector(Shape{1, shape[0], shape[1], shape[2]}, pixels);
    std::vector<float> logits = model->logits(ctx, batch).to_vector();
    // Softmax around the largest logit.
    const float top = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float z : logits) sum += std::exp(static_cast<double>(z - top));
    std::vector<int> order(classes);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + shown, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b]; });
    std::vector<Ranked> ranked;
    for (int64_t k = 0; k < shown; ++k)
      ranked.push_back({order[k], std::exp(static_cast<double>(logits[order[k]] - top)) / sum});
    if (s.json) {
      nlohmann::json top_classes = nlohmann::json::array();
      for (const Ranked& r : ranked)
        top_classes.push_back(with_text({{"index", r.index}, {"probability", r.probability}}, "class", class_name(r.index)));
      nlohmann::json line = with_text({}, "image", path);
      line["top"] = top_classes;
      print_json_line(line);
    } else {
      std::printf("%-*s", static_cast<int>(path_width), path.c_str());
      for (const Ranked& r : ranked) std::printf("  %-16s %6.2f%%", class_name(r.index).c_str(), 100.0 * r.probability);
      std::printf("\n");
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace lockstep::app
