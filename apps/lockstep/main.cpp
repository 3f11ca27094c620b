// The lockstep command-line program: a thin layer over the library. Errors
// end in one line on stderr and a non-zero exit code (2 for bad arguments,
// 1 for everything else).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>

#include "base/error.h"
#include "commands.h"

using namespace lockstep::app;

namespace {

// A whole number written in digits alone, at most `max`: CLI11's own
// conversion wraps "-1" and saturates 2^64 and beyond into an unsigned
// option without a word.
CLI::Validator whole_number(uint64_t max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        const std::string bound = std::to_string(max);
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "expected a whole number from 0 to " + bound + ", got " + text;
        errno = 0;
        const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE || value > max) return text + " is above the largest allowed, " + bound;
        return std::string();
      },
      "UINT");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep: data-parallel training of image classifiers on every GPU of one machine"};
  app.require_subcommand(0, 1);

  TrainSettings train;
  const CLI::Validator count = whole_number(std::numeric_limits<int64_t>::max());
  std::vector<std::pair<std::string, CLI::Option*>> train_flags;
  CLI::App* train_cmd = app.add_subcommand("train", "train a model (no argument: the default model on Fashion-MNIST)");
  auto flag = [&](CLI::Option* o, const std::string& name) {
    train_flags.emplace_back(name, o);
    return o;
  };
  flag(train_cmd->add_option("--data", train.data, "data set: IDX or CIFAR-10 folder, or image folder"), "--data");
  flag(train_cmd->add_option("--test-data", train.test_data, "separate test set"), "--test-data");
  flag(train_cmd->add_option(
           "--model", train.model,
           "mlp, simple-cnn, resnet18, resnet20, resnet50, vgg11-bn, vgg16, vgg16-bn, vgg-f or deep-cnn "
           "(CIFAR-sized variants), or torchvision's ImageNet architectures exactly, for --init: tv-resnet18, "
           "tv-resnet34, tv-resnet50, tv-vgg16 or tv-vgg16-bn"),
       "--model");
  flag(train_cmd->add_option("--init", train.init,
                             "start a tv-* model from these pretrained weights: a state dict in safetensors form with "
                             "torchvision's or timm's names (F32, F16 or BF16); another class count, or other "
                             "classes (an export names them), re-initialises the classifier"),
       "--init");
  flag(train_cmd->add_option("--epochs", train.epochs, "epochs to train")->check(count)->check(CLI::PositiveNumber),
       "--epochs");
  flag(
      train_cmd->add_option("--batch", train.batch, "global mini-batch size")->check(count)->check(CLI::PositiveNumber),
      "--batch");
  flag(
      train_cmd->add_option("--batch-per-device", train.batch_per_device, "mini-batch per replica (instead of --batch)")
          ->check(count)
          ->check(CLI::PositiveNumber),
      "--batch-per-device");
  flag(train_cmd->add_option("--lr", train.lr, "base learning rate")->check(CLI::PositiveNumber), "--lr");
  flag(train_cmd->add_flag("--scale-lr", train.scale_lr, "multiply the lr by the replica count (with --batch-per-device)"),
       "--scale-lr");
  flag(train_cmd->add_option("--momentum", train.momentum, "SGD momentum")->check(CLI::Range(0.0, 0.999999)), "--momentum");
  flag(train_cmd->add_flag("--nesterov", train.nesterov, "Nesterov momentum"), "--nesterov");
  flag(train_cmd->add_flag("--sync-bn", train.sync_bn,
                           "batch-norm statistics over all replicas, all-reduced in forward (N replicas train as one)"),
       "--sync-bn");
  flag(train_cmd->add_option("--bucket-mb", train.bucket_mb,
                             "gradient all-reduce bucket size in MiB (overlap with backward; results do not change)"),
       "--bucket-mb");
  flag(train_cmd->add_option("--first-bucket-mb", train.first_bucket_mb,
                             "size in MiB of the first bucket, the last layers' gradients, sent early in backward"),
       "--first-bucket-mb");
  flag(train_cmd->add_flag("--cuda-graphs", train.cuda_graphs,
                           "GPU replicas capture a step into a CUDA graph and replay it while the batch size stays "
                           "(replicas sharing a GPU run eagerly)"),
       "--cuda-graphs");
  flag(train_cmd->add_option("--precision", train.precision,
                             "fp32 (strict), tf32 (the default: TF32 tensor-core convolutions and GEMMs on a GPU, "
                             "as PyTorch's default; FP32 on the CPU, as PyTorch's CPU) or bf16 (mixed precision as "
                             "PyTorch AMP: bf16 activations on a GPU, bf16 values in FP32 storage on the CPU)")
           ->check(CLI::IsMember({"fp32", "tf32", "bf16"})),
       "--precision");
  flag(train_cmd->add_option("--memory-format", train.memory_format,
                             "nchw or nhwc: how the activations lie in memory (channels-last, cuDNN's NHWC "
                             "convolutions on a GPU); the weights, checkpoints and predictions are the same. Default: "
                             "nhwc for --precision bf16 on a GPU (as PyTorch AMP with channels_last), nchw otherwise")
           ->check(CLI::IsMember({"nchw", "nhwc"})),
       "--memory-format");
  flag(train_cmd->add_option("--weight-decay", train.weight_decay, "on conv/linear weights")->check(CLI::NonNegativeNumber),
       "--weight-decay");
  flag(train_cmd->add_option("--clip-grad-norm", train.clip_grad_norm,
                             "scale the gradients down to this global L2 norm when above it (0: off)")
           ->check(CLI::NonNegativeNumber),
       "--clip-grad-norm");
  flag(train_cmd->add_option("--label-smoothing", train.label_smoothing,
                             "E in [0, 1): train towards (1 - E) on the label and E spread over all classes "
                             "(PyTorch's CrossEntropyLoss(label_smoothing=E)); test losses stay plain cross-entropy")
           ->check(CLI::Range(0.0f, 0.999999f)),
       "--label-smoothing");
  flag(train_cmd->add_flag("--freeze-backbone", train.freeze_backbone,
                           "train the classifier alone (the last layer with weights); the layers before it run as "
                           "in inference, their batch norm keeping its statistics"),
       "--freeze-backbone");
  flag(train_cmd->add_option("--backbone-lr-scale", train.backbone_lr_scale,
                             "the layers before the classifier learn at this times --lr (pretrained layers "
                             "change slowly, the new classifier fast); 0 freezes their weights")
           ->check(CLI::NonNegativeNumber),
       "--backbone-lr-scale");
  flag(train_cmd->add_option("--schedule", train.schedule, "constant, step or cosine")
           ->check(CLI::IsMember({"constant", "step", "cosine"})),
       "--schedule");
  flag(train_cmd->add_option("--warmup-epochs", train.warmup_epochs, "linear warmup")->check(CLI::NonNegativeNumber),
       "--warmup-epochs");
  flag(train_cmd->add_option("--devices", train.devices, "all, cpu, or GPU ordinals like 0,1"), "--devices");
  flag(train_cmd->add_option("--replicas", train.replicas, "replicas on the one device given")->check(CLI::PositiveNumber),
       "--replicas");
  flag(train_cmd->add_option("--seed", train.seed, "seed of initialisation, order and augmentation")
           ->check(whole_number(std::numeric_limits<uint64_t>::max())),
       "--seed");
  flag(train_cmd->add_option("--checkpoint", train.checkpoint, "checkpoint written every epoch and on Ctrl-C"),
       "--checkpoint");
  flag(train_cmd->add_option("--resume", train.resume, "continue from this checkpoint"), "--resume");
  flag(train_cmd->add_option("--metrics", train.metrics, "write JSON lines of steps and epochs here"), "--metrics");
  flag(train_cmd->add_option("--augment", train.augment,
                             "none, crop-flip (a shifted crop of the image padded with zeros, and a mirror) or "
                             "random-resized-crop (8-100% of the area at aspect 3/4-4/3 resized back, and a mirror, as "
                             "torchvision's ImageNet training; image folders then keep their aspect ratio, and "
                             "eval and predict take the centred 87.5%)")
           ->check(CLI::IsMember({"none", "crop-flip", "random-resized-crop"})),
       "--augment");
  flag(train_cmd->add_option("--normalize", train.normalize,
                             "dataset (the training set's mean and std per channel), imagenet (ImageNet's RGB mean "
                             "and std, what pretrained weights expect) or none. Default: imagenet with --init on "
                             "RGB data, else dataset")
           ->check(CLI::IsMember({"dataset", "imagenet", "none"})),
       "--normalize");
  flag(train_cmd->add_option("--input", train.input, "image folders: resize to CxHxW"), "--input");
  flag(train_cmd->add_option("--threads", train.threads, "loader threads")->check(CLI::PositiveNumber), "--threads");
  flag(train_cmd->add_option("--limit", train.limit, "train on this many samples only")
           ->check(count)
           ->check(CLI::NonNegativeNumber),
       "--limit");
  flag(train_cmd->add_option("--test-limit", train.test_limit, "test on this many samples only")
           ->check(count)
           ->check(CLI::NonNegativeNumber),
       "--test-limit");
  bool no_dropout = false;
  flag(train_cmd->add_flag("--no-dropout", no_dropout, "build the model without dropout"), "--no-dropout");
  flag(train_cmd->add_flag("--skip-bad-images", train.skip_bad_images, "skip undecodable images, report them"),
       "--skip-bad-images");
  flag(train_cmd->add_flag("--drop-last", train.drop_last, "drop the last partial batch of each epoch"), "--drop-last");
  flag(train_cmd->add_flag("--force", train.force,
                           "let --checkpoint/--metrics overwrite an existing file of another kind (never an input)"),
       "--force");
  flag(train_cmd->add_option("--cache-mb", train.cache_mb,
                             "image folders: keep the decoded images in memory when they fit this many MiB, so each "
                             "is decoded once (0: decode every epoch; default: a quarter of the memory available)")
           ->check(CLI::NonNegativeNumber),
       "--cache-mb");
  flag(train_cmd->add_option("--max-image-pixels", train.max_image_pixels,
                             "refuse images whose header declares more pixels (default PIL's 178956970)")
           ->check(CLI::PositiveNumber),
       "--max-image-pixels");
  flag(train_cmd->add_option("--test-fraction", train.test_fraction,
                             "a single class folder: share of each class held out for testing (default 0.1)"),
       "--test-fraction");
  flag(train_cmd->add_option("--time-limit", train.time_limit,
                             "stop past this wall time (20s, 10m, 1h), evaluate, write the checkpoint"),
       "--time-limit");
  flag(train_cmd->add_option("--plot", train.plot, "training-curve PNG (default: the checkpoint's name, .png)"),
       "--plot");

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

  PredictSettings predict;
  CLI::App* predict_cmd = app.add_subcommand("predict", "top-5 classes of image files and folders of them");
  predict_cmd->add_option("--checkpoint", predict.checkpoint, "checkpoint to predict with")->required();
  predict_cmd->add_option("--top", predict.top, "classes to show")->check(CLI::PositiveNumber);
  predict_cmd->add_flag("--json", predict.json, "one JSON object per image instead of a table");
  predict_cmd->add_option("--max-image-pixels", predict.max_image_pixels, "refuse images declaring more pixels")
      ->check(CLI::PositiveNumber);
  predict_cmd->add_option("images", predict.images, "image files, or folders searched for images")->required();

  ExportSettings export_settings;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "a tv-* checkpoint's weights as a state dict that torchvision's (or timm's) model loads strictly");
  export_cmd->add_flag("--force", export_settings.force,
                       "let the output replace a file that is not a safetensors file (never the checkpoint)");
  export_cmd->add_option("--format", export_settings.format, "torchvision (the default) or timm names")
      ->check(CLI::IsMember({"torchvision", "timm"}));
  export_cmd->add_option("checkpoint", export_settings.checkpoint, "checkpoint of a tv-* model")->required();
  export_cmd->add_option("output", export_settings.output,
                         "the .safetensors file to write (class names: beside it, .classes.txt)")
      ->required();

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
    if (train_cmd->parsed()) {
      std::vector<std::string> given;
      for (auto& [name, option] : train_flags)
        if (option->count() > 0) given.push_back(name);
      train.dropout = !no_dropout;
      return run_train(train, given);
    }
    if (eval_cmd->parsed()) return run_eval(eval);
    if (predict_cmd->parsed()) return run_predict(predict);
    if (export_cmd->parsed()) return run_export(export_settings);
    if (app.got_subcommand("info")) return run_info();
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "lockstep: error: %s\n", e.what());
    return 1;
  }
}
