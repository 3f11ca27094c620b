// The lockstep command-line program: a thin layer over the library. Errors
// end in one line on stderr and a non-zero exit code (2 for bad arguments,
// 1 for everything else).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <limits>

#include "base/error.h"
#include "commands.h"
#include "whole_number.h"

using namespace lockstep::app;

int main(int argc, char** argv) {
  CLI::App app{"lockstep: data-parallel training of image classifiers on every GPU of one machine"};
  app.require_subcommand(0, 1);

  CLI::App* train_cmd = app.add_subcommand("train", "train a model (no argument: the default model on Fashion-MNIST)");
  TrainFlags train(*train_cmd);

  EvalSettings eval;
  CLI::App* eval_cmd = app.add_subcommand("eval", "loss, accuracy and per-class accuracy of a checkpoint");
  eval_cmd->add_option("--checkpoint", eval.checkpoint, "checkpoint to evaluate")->required();
  eval_cmd->add_option("--data", eval.data, "data set (default: the one it was trained on)");
  eval_cmd->add_option("--devices", eval.devices, "all, cpu, or GPU ordinals");
  eval_cmd->add_option("--batch", eval.batch, "batch size")->check(CLI::PositiveNumber);
  eval_cmd->add_option("--threads", eval.threads, "loader threads")->check(CLI::PositiveNumber);
  eval_cmd->add_option("--max-image-pixels", eval.max_image_pixels, "refuse images declaring more pixels")
      ->check(CLI::PositiveNumber);
  eval_cmd->add_option("--plot", eval.plot, "write the confusion matrix as this PNG");
  eval_cmd->add_flag("--force", eval.force, "let --plot replace a file that is not a PNG (never an input)");
  eval_cmd->add_flag("--skip-bad-images", eval.skip_bad_images, "skip undecodable images, report them");
  eval_cmd->add_option("--precision", eval.precision, "fp32, tf32 or bf16 (default: the one the checkpoint trained in)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  const char* no_ema_help = "the raw weights of a checkpoint trained with --ema (default: its moving average)";
  eval_cmd->add_flag("--no-ema", eval.no_ema, no_ema_help);

  PredictSettings predict;
  CLI::App* predict_cmd = app.add_subcommand("predict", "top-5 classes of image files and folders of them");
  predict_cmd->add_option("--checkpoint", predict.checkpoint, "checkpoint to predict with")->required();
  predict_cmd->add_option("--top", predict.top, "classes to show")->check(CLI::PositiveNumber);
  predict_cmd->add_flag("--json", predict.json, "one JSON object per image instead of a table");
  predict_cmd->add_option("--max-image-pixels", predict.max_image_pixels, "refuse images declaring more pixels")
      ->check(CLI::PositiveNumber);
  predict_cmd->add_flag("--no-ema", predict.no_ema, no_ema_help);
  predict_cmd->add_option("images", predict.images, "image files, or folders searched for images")->required();

  ExportSettings export_settings;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "a tv-* checkpoint's weights as a state dict that torchvision's (or timm's) model loads strictly, "
                "or any checkpoint as an ONNX model for inference (docs/deploy.md)");
  export_cmd->add_flag("--force", export_settings.force,
                       "let the output replace a file that is not one export wrote (never the checkpoint)");
  export_cmd->add_option("--format", export_settings.format,
                         "torchvision (the default) or timm names, or onnx (opset 13, FP32)")
      ->check(CLI::IsMember({"torchvision", "timm", "onnx"}));
  export_cmd->add_flag("--include-preprocessing", export_settings.include_preprocessing,
                       "onnx: normalise the input in the graph (default: its mean and std in the metadata)");
  export_cmd->add_flag("--no-ema", export_settings.no_ema, no_ema_help);
  export_cmd->add_option("checkpoint", export_settings.checkpoint,
                         "checkpoint (of a tv-* model, except for onnx)")->required();
  export_cmd->add_option("output", export_settings.output,
                         "the file to write: .safetensors (class names beside it, .classes.txt), or .onnx")
      ->required();

  CacheSettings cache;
  CLI::App* cache_cmd = app.add_subcommand(
      "cache", "decode an image folder once into a cache file that train reads (docs/training.md)");
  cache_cmd->add_option("data", cache.data, "image folder (class sub-folders, or train/ beside test/)")->required();
  cache_cmd->add_option("--input", cache.input, "CxHxW the images are resized to, as train's --input")->required();
  cache_cmd->add_option("-o,--output", cache.output,
                        "the cache file (default: DATA.lockstep-cache beside the folder, which train finds by itself)");
  cache_cmd->add_option("--augment", cache.augment,
                        "as train's: random-resized-crop keeps each image's aspect ratio (a centre crop), the "
                        "others stretch it")
      ->check(CLI::IsMember({"none", "crop-flip", "random-resized-crop", "trivial"}));
  cache_cmd->add_option("--test-fraction", cache.test_fraction,
                        "a single class folder: share of each class held out for testing, as train's")
      ->check(CLI::Range(0.0, 0.999999));
  cache_cmd->add_option("--seed", cache.seed, "the seed of the split, as train's --seed")
      ->check(whole_number(std::numeric_limits<uint64_t>::max()));
  cache_cmd->add_flag("--skip-bad-images", cache.skip_bad_images, "leave undecodable images out, report them");
  cache_cmd->add_option("--max-image-pixels", cache.max_image_pixels, "refuse images declaring more pixels")
      ->check(CLI::PositiveNumber);
  cache_cmd->add_option("--threads", cache.threads, "decoding threads (default: one per core)")
      ->check(CLI::PositiveNumber);
  cache_cmd->add_flag("--force", cache.force, "let -o replace a file that is not a cache file (never the data)");

  app.add_subcommand("info", "devices and CUDA, driver, cuDNN and NCCL versions");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "lockstep: error: %s (see lockstep %s--help)\n", e.what(),
                 app.get_subcommands().empty() ? "" : (app.get_subcommands()[0]->get_name() + " ").c_str());
    return 2;
  }

  try {
    if (train_cmd->parsed()) return run_train(train);
    if (eval_cmd->parsed()) return run_eval(eval);
    if (predict_cmd->parsed()) return run_predict(predict);
    if (export_cmd->parsed()) return run_export(export_settings);
    if (cache_cmd->parsed()) return run_cache(cache);
    if (app.got_subcommand("info")) return run_info();
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "lockstep: error: %s\n", e.what());
    return 1;
  }
}
