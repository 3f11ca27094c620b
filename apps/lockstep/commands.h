#pragma once
// The `lockstep` subcommands. Each returns the process exit code; errors
// reach main() as exceptions.
#include <string>
#include <vector>

#include "settings.h"
#include "train_flags.h"

namespace lockstep::app {

int run_train(const TrainFlags& flags);

struct EvalSettings {
  std::string checkpoint, data, devices = "all";
  int64_t batch = 256;
  int threads = 2;
  int64_t max_image_pixels = data::kDefaultMaxImagePixels;
  std::string plot;  // confusion-matrix PNG
  bool force = false;  // --plot may replace a file that is not a PNG (never the checkpoint or the data)
  bool skip_bad_images = false;
  std::string precision;  // empty: the one the checkpoint was trained in
  bool no_ema = false;    // the raw weights of a checkpoint that holds a moving average (train --ema)
};
int run_eval(const EvalSettings& settings);

struct PredictSettings {
  std::string checkpoint;
  std::vector<std::string> images;
  int64_t top = 5;
  int64_t max_image_pixels = data::kDefaultMaxImagePixels;
  bool json = false;  // JSON lines instead of a table
  bool no_ema = false;  // as eval's
};
int run_predict(const PredictSettings& settings);

struct ExportSettings {
  std::string checkpoint, output;
  std::string format = "torchvision";  // or timm: the tensors' names; or onnx: a model for inference
  bool force = false;  // the output may replace a file of another kind (never the checkpoint)
  bool include_preprocessing = false;  // onnx: the input's normalisation as nodes, not metadata
  bool no_ema = false;  // as eval's
};
int run_export(const ExportSettings& settings);
// --format onnx (onnx_export/export_onnx.cpp; without ONNX built in, a refusal that says so).
int run_onnx_export(const ExportSettings& settings);

struct CacheSettings {
  std::string data, input, output;  // output empty: DATA.lockstep-cache beside the folder
  std::string augment = "crop-flip";  // random-resized-crop keeps the aspect ratio, as train's
  double test_fraction = 0.1;
  uint64_t seed = 1;  // the split's, as train's --seed
  bool skip_bad_images = false;
  int64_t max_image_pixels = data::kDefaultMaxImagePixels;
  int threads = 0;  // 0: one per core
  bool force = false;  // -o may replace a file of another kind (never the data)
};
int run_cache(const CacheSettings& settings);

int run_info();

}  // namespace lockstep::app
