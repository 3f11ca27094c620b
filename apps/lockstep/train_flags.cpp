#include "train_flags.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "runtime/memory_format_option.h"

namespace lockstep::app {

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

TrainFlags::TrainFlags(CLI::App& command) : command_(command) {
  const CLI::Validator count = whole_number(std::numeric_limits<int64_t>::max());
  command.add_option("--data", values_.data, "data set: IDX or CIFAR-10 folder, or image folder");
  command.add_option("--test-data", values_.test_data, "separate test set");
  command.add_option(
      "--model", values_.model,
      "mlp, simple-cnn, resnet18, resnet20, resnet50, vgg11-bn, vgg16, vgg16-bn, vgg-f or deep-cnn "
      "(CIFAR-sized variants), or torchvision's ImageNet architectures exactly, for --init: tv-resnet18, "
      "tv-resnet34, tv-resnet50, tv-vgg16 or tv-vgg16-bn");
  command.add_option("--init", values_.init,
                     "start a tv-* model from these pretrained weights: a state dict in safetensors form with "
                     "torchvision's or timm's names (F32, F16 or BF16); another class count, or other "
                     "classes (an export names them), re-initialises the classifier");
  command.add_option("--epochs", values_.epochs, "epochs to train")->check(count)->check(CLI::PositiveNumber);
  command.add_option("--batch", values_.batch, "global mini-batch size")->check(count)->check(CLI::PositiveNumber);
  command.add_option("--batch-per-device", values_.batch_per_device, "mini-batch per replica (instead of --batch)")
      ->check(count)
      ->check(CLI::PositiveNumber);
  command.add_option("--lr", values_.lr, "base learning rate")->check(CLI::PositiveNumber);
  command.add_flag("--scale-lr", values_.scale_lr, "multiply the lr by the replica count (with --batch-per-device)");
  command.add_option("--momentum", values_.momentum, "SGD momentum")->check(CLI::Range(0.0, 0.999999));
  command.add_flag("--nesterov", values_.nesterov, "Nesterov momentum");
  command.add_flag("--sync-bn", values_.sync_bn,
                   "batch-norm statistics over all replicas, all-reduced in forward (N replicas train as one)");
  command.add_option("--bucket-mb", values_.bucket_mb,
                     "gradient all-reduce bucket size in MiB (overlap with backward; results do not change)");
  command.add_option("--first-bucket-mb", values_.first_bucket_mb,
                     "size in MiB of the first bucket, the last layers' gradients, sent early in backward");
  command.add_flag("--cuda-graphs", values_.cuda_graphs,
                   "GPU replicas capture a step into a CUDA graph and replay it while the batch size stays "
                   "(replicas sharing a GPU run eagerly)");
  command
      .add_option("--precision", precision_,
                  "fp32 (strict), tf32 (the default: TF32 tensor-core convolutions and GEMMs on a GPU, "
                  "as PyTorch's default; FP32 on the CPU, as PyTorch's CPU) or bf16 (mixed precision as "
                  "PyTorch AMP: bf16 activations on a GPU, bf16 values in FP32 storage on the CPU)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  command
      .add_option("--memory-format", memory_format_,
                  "nchw or nhwc: how the activations lie in memory (channels-last, cuDNN's NHWC "
                  "convolutions on a GPU); the weights, checkpoints and predictions are the same. Default: "
                  "nhwc for --precision bf16 on a GPU (as PyTorch AMP with channels_last), nchw otherwise")
      ->check(CLI::IsMember({"nchw", "nhwc"}));
  command.add_option("--weight-decay", values_.weight_decay, "on conv/linear weights")->check(CLI::NonNegativeNumber);
  command
      .add_option("--clip-grad-norm", values_.clip_grad_norm,
                  "scale the gradients down to this global L2 norm when above it (0: off)")
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--label-smoothing", values_.label_smoothing,
                  "E in [0, 1): train towards (1 - E) on the label and E spread over all classes "
                  "(PyTorch's CrossEntropyLoss(label_smoothing=E)); test losses stay plain cross-entropy")
      ->check(CLI::Range(0.0f, 0.999999f));
  command.add_flag("--freeze-backbone", values_.freeze_backbone,
                   "train the classifier alone (the last layer with weights); the layers before it run as "
                   "in inference, their batch norm keeping its statistics");
  command
      .add_option("--backbone-lr-scale", values_.backbone_lr_scale,
                  "the layers before the classifier learn at this times --lr (pretrained layers "
                  "change slowly, the new classifier fast); 0 freezes their weights")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--schedule", schedule_, "constant, step or cosine")
      ->check(CLI::IsMember({"constant", "step", "cosine"}));
  command.add_option("--warmup-epochs", values_.warmup_epochs, "linear warmup")->check(CLI::NonNegativeNumber);
  command.add_option("--devices", values_.devices, "all, cpu, or GPU ordinals like 0,1");
  command.add_option("--replicas", values_.replicas, "replicas on the one device given")->check(CLI::PositiveNumber);
  command.add_option("--seed", values_.seed, "seed of initialisation, order and augmentation")
      ->check(whole_number(std::numeric_limits<uint64_t>::max()));
  command.add_option("--checkpoint", values_.checkpoint, "checkpoint written every epoch and on Ctrl-C");
  command.add_option("--resume", values_.resume, "continue from this checkpoint");
  command.add_option("--metrics", values_.metrics, "write JSON lines of steps and epochs here");
  command
      .add_option("--augment", values_.augment,
                  "none, crop-flip (a shifted crop of the image padded with zeros, and a mirror) or "
                  "random-resized-crop (8-100% of the area at aspect 3/4-4/3 resized back, and a mirror, as "
                  "torchvision's ImageNet training; image folders then keep their aspect ratio, and "
                  "eval and predict take the centred 87.5%)")
      ->check(CLI::IsMember({"none", "crop-flip", "random-resized-crop"}));
  command
      .add_option("--augment-on", values_.augment_on,
                  "GPU training: gpu (the default: batches cross as bytes and are cropped, flipped and "
                  "normalised there) or cpu (the loader's threads do it and send floats, four times the "
                  "bytes); the same values either way. CPU replicas always augment in the loader")
      ->check(CLI::IsMember({"gpu", "cpu"}));
  command
      .add_option("--normalize", values_.normalize,
                  "dataset (the training set's mean and std per channel), imagenet (ImageNet's RGB mean "
                  "and std, what pretrained weights expect) or none. Default: imagenet with --init on "
                  "RGB data, else dataset")
      ->check(CLI::IsMember({"dataset", "imagenet", "none"}));
  command.add_option("--input", values_.input, "image folders: resize to CxHxW");
  command.add_option("--threads", values_.threads,
                     "loader threads. Default: on GPUs the cores they leave (2 to 32), on the CPU 2")
      ->check(CLI::PositiveNumber);
  command.add_option("--limit", values_.limit, "train on this many samples only")
      ->check(count)
      ->check(CLI::NonNegativeNumber);
  command.add_option("--test-limit", values_.test_limit, "test on this many samples only")
      ->check(count)
      ->check(CLI::NonNegativeNumber);
  command.add_flag("--no-dropout", no_dropout_, "build the model without dropout");
  command.add_flag("--skip-bad-images", values_.skip_bad_images, "skip undecodable images, report them");
  command.add_flag("--drop-last", values_.drop_last, "drop the last partial batch of each epoch");
  command.add_flag("--force", values_.force,
                   "let --checkpoint/--metrics overwrite an existing file of another kind (never an input)");
  command
      .add_option("--cache-mb", values_.cache_mb,
                  "image folders: keep the decoded images in memory when they fit this many MiB, so each "
                  "is decoded once (0: decode every epoch; default: a quarter of the memory available)")
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--max-image-pixels", values_.max_image_pixels,
                  "refuse images whose header declares more pixels (default PIL's 178956970)")
      ->check(CLI::PositiveNumber);
  command.add_option("--test-fraction", values_.test_fraction,
                     "a single class folder: share of each class held out for testing (default 0.1)");
  command.add_option("--time-limit", time_limit_,
                     "stop past this wall time (20s, 10m, 1h), evaluate, write the checkpoint");
  command.add_option("--plot", values_.plot, "training-curve PNG (default: the checkpoint's name, .png)");
}

TrainSettings TrainFlags::settings() const {
  TrainSettings s = values_;
  for (const CLI::Option* option : command_.get_options())
    if (option->count() > 0) s.given.add(option->get_name());
  if (s.given.contains("--schedule")) s.schedule = parse_schedule(schedule_);
  if (s.given.contains("--precision")) s.precision = parse_precision(precision_, "--precision");
  if (s.given.contains("--memory-format")) s.memory_format = parse_memory_format(memory_format_, "--memory-format");
  if (!time_limit_.empty()) s.time_limit = parse_duration(time_limit_, "--time-limit");  // "": no limit, as left out
  s.dropout = !no_dropout_;
  return s;
}

}  // namespace lockstep::app
